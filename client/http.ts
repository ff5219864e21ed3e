/**
 * @module The one way this client sends a request: the service's origin, the credential, one
 * retry policy, `AbortSignal`, and every non-2xx answer as a typed problem+json error (spec 7).
 * Plain web-standard `fetch`, so it runs in browser tabs, Web Workers, Node and workerd.
 */
import type { components } from "./schema.js";

/** A `fetch`: the platform's, or a test's (e.g. workerd's `SELF.fetch`). */
export type FetchLike = (request: Request) => Promise<Response>;

/** The RFC 7807 body of every error answer (spec 7); 422s carry `errors[]`, 501s `capability`. */
export type Problem = components["schemas"]["Problem"];

/** A non-2xx answer of the service (or of something in front of it), with its problem+json body. */
export class ProblemError extends Error {
  override name = "ProblemError";
  constructor(readonly problem: Problem) {
    super(problem.detail ? `${problem.title}: ${problem.detail}` : problem.title);
  }

  get status(): number {
    return this.problem.status;
  }

  /** The error class: the last segment of `type` (`{errors_base}/<slug>`), e.g. `not_found`. */
  get slug(): string {
    return this.problem.type.slice(this.problem.type.lastIndexOf("/") + 1);
  }

  /** Reads a problem from an error answer; one that is not problem+json (a proxy's page) is described by its status. */
  static async of(res: Response, instance?: string): Promise<ProblemError> {
    return ProblemError.fromBody(res, await res.text().catch(() => ""), instance);
  }

  /** `of`, for an answer whose body was read already (as text or parsed JSON). */
  static fromBody(res: Response, body: unknown, instance = pathOf(res.url)): ProblemError {
    let parsed = body;
    if (typeof body === "string") {
      try {
        parsed = JSON.parse(body);
      } catch {
        // not JSON: described by its status below
      }
    }
    if (parsed && typeof parsed === "object" && typeof (parsed as Partial<Problem>).title === "string") {
      return new ProblemError({ type: "about:blank", instance, ...(parsed as Partial<Problem>), status: res.status } as Problem);
    }
    const text = typeof body === "string" ? body : "";
    const title = `HTTP ${res.status} ${res.statusText}`.trim();
    return new ProblemError({ type: "about:blank", title, status: res.status, instance, ...(text ? { detail: text.slice(0, 300) } : {}) });
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** The error as one line for a status region or a log: problem title and detail, or the message. */
export function describeError(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export interface TransportOptions {
  /** The service's origin, e.g. `http://127.0.0.1:8787`; "" (the default) for a page's own origin. */
  baseUrl?: string;
  /**
   * `Authorization` of every request: `Bearer <API key>` (api_key mode, spec 5) or `Bearer <runner
   * token>`; a function is asked at each request (a page whose key can change).
   */
  authorization?: string | (() => string | null | undefined) | undefined;
  fetch?: FetchLike;
  /** How many times a request is sent again after a failure that says nothing about the request itself (default 3). */
  retries?: number;
}

/**
 * Answers of the infrastructure in front of the service (workerd or Cloudflare's edge: an isolate
 * or Durable Object restarting, an overloaded proxy), never a verdict of the service on the request.
 */
const TRANSIENT_STATUSES = new Set([502, 503, 504]);
const RETRY_AFTER_CAP_MS = 5000;

/** Methods whose repeat changes nothing (RFC 9110 9.2.2); a POST is idempotent only where the protocol says so. */
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

export class Transport {
  readonly baseUrl: string;
  private readonly fetchFn: FetchLike;
  private readonly retries: number;

  constructor(private readonly o: TransportOptions = {}) {
    this.baseUrl = (o.baseUrl ?? "").replace(/\/$/, "");
    this.fetchFn = o.fetch ?? ((request) => fetch(request));
    this.retries = o.retries ?? 3;
  }

  /** The credential now, or null. */
  authorization(): string | null {
    const a = typeof this.o.authorization === "function" ? this.o.authorization() : this.o.authorization;
    return a || null;
  }

  /** An absolute URL of a path of the service (relative to the page when the origin is ""). */
  url(path: string): string {
    return `${this.baseUrl}${path}`;
  }

  /**
   * Sends a request with the credential (unless it has its own), again when the connection failed
   * before any answer (a network error, e.g. a kept-alive socket the server had just closed: such a
   * request never reached the service) or the answer was 429 (not applied: the service asks to come
   * back later), and, when `idempotent`, when the infrastructure answered a transient 502/503/504
   * (sending it twice changes nothing). Backs off 200 ms, 400 ms, 800 ms, or as `Retry-After` says
   * (up to 5 s); an abort of the request's signal ends the waiting at once. Answers whatever status
   * came last: callers decide what is an error.
   */
  readonly send = async (request: Request, idempotent = IDEMPOTENT_METHODS.has(request.method)): Promise<Response> => {
    const auth = this.authorization();
    if (auth && !request.headers.has("Authorization")) request.headers.set("Authorization", auth);
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.retries;
      let res: Response;
      try {
        // A clone per attempt keeps the body readable for the next one (workers' types call the clone another Request).
        res = await this.fetchFn(last ? request : (request.clone() as Request));
      } catch (e) {
        if (!(e instanceof TypeError) || request.signal.aborted || last) throw e;
        await sleep(200 * 2 ** attempt, request.signal);
        continue;
      }
      const transient = res.status === 429 || (idempotent && TRANSIENT_STATUSES.has(res.status));
      if (!transient || last) return res;
      await res.body?.cancel();
      const retryAfter = Number(res.headers.get("Retry-After"));
      await sleep(
        Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, RETRY_AFTER_CAP_MS) : 200 * 2 ** attempt,
        request.signal,
      );
    }
  };

  /** `send`, sending again whatever the method (for POSTs the protocol makes harmless to repeat). */
  readonly sendIdempotent = (request: Request): Promise<Response> => this.send(request, true);

  /** A request of `path` that must answer 2xx (or one of `accept`); other answers throw a ProblemError. */
  async fetch(path: string, init: RequestInit & { idempotent?: boolean; accept?: number[] } = {}): Promise<Response> {
    const { idempotent, accept = [], ...rest } = init;
    const res = await this.send(new Request(this.url(path), rest), idempotent);
    if (!res.ok && !accept.includes(res.status)) throw await ProblemError.of(res, path);
    return res;
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener("abort", abort);
      resolve();
    };
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", abort, { once: true });
  });
}
