/**
 * @module What a storage call answers across the Durable Object RPC boundary: the value, or an
 * expected failure with its HTTP meaning. (Thrown errors lose their type across RPC, so expected
 * failures travel as data; the service layer turns them into ApiErrors.)
 */
import type { FieldError } from "../errors";

export type Failure = { ok: false; status: 404 | 409 | 422; detail: string; errors?: FieldError[] };
export type Outcome<T> = { ok: true; value: T } | Failure;

export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const missing = (what: string): Failure => ({ ok: false, status: 404, detail: `${what} not found` });
export const clash = (detail: string): Failure => ({ ok: false, status: 409, detail });
export const invalid = (detail: string, errors: FieldError[] = []): Failure => ({ ok: false, status: 422, detail, errors });
