/**
 * @module KeyRegistry: the API keys of every tenant (spec 5, 4.17), in one SQLite-backed
 * Durable Object. Only the SHA-256 digest of a raw key is stored, so a lost key cannot be
 * recovered, only replaced; the digest resolves to exactly one tenant.
 */
import { DurableObject } from "cloudflare:workers";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { ulid } from "./ids";
import { migrate, nowIso } from "./sql";

export interface ApiKeyRow {
  api_key_id: string;
  tenant_id: string;
  name: string | null;
  created_at: string;
  revoked_at: string | null;
}

const MIGRATIONS = [
  [
    `CREATE TABLE api_keys (
      api_key_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT, digest TEXT NOT NULL UNIQUE,
      created_at TEXT NOT NULL, revoked_at TEXT)`,
  ],
];

export const digestKey = (raw: string) => bytesToHex(sha256(utf8ToBytes(raw)));

/** 24 random bytes, base64url: the secret part of a key (and of runner tokens and lease ids). */
export function secret(): string {
  const b = crypto.getRandomValues(new Uint8Array(24));
  return btoa(String.fromCharCode(...b))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replaceAll("=", "");
}

export class KeyRegistry extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage, MIGRATIONS));
  }

  /** Mints `sfm_<ULID>_<random>` (5.1); the raw key is returned once and never stored. */
  issue(tenantId: string, name: string | null): ApiKeyRow & { raw_key: string } {
    const id = ulid();
    const raw = `sfm_${id}_${secret()}`;
    const row: ApiKeyRow = { api_key_id: id, tenant_id: tenantId, name, created_at: nowIso(), revoked_at: null };
    this.ctx.storage.sql.exec(
      "INSERT INTO api_keys (api_key_id, tenant_id, name, digest, created_at) VALUES (?, ?, ?, ?, ?)",
      id,
      tenantId,
      name,
      digestKey(raw),
      row.created_at,
    );
    return { ...row, raw_key: raw };
  }

  list(): ApiKeyRow[] {
    return this.ctx.storage.sql
      .exec("SELECT api_key_id, tenant_id, name, created_at, revoked_at FROM api_keys ORDER BY api_key_id")
      .toArray() as unknown as ApiKeyRow[];
  }

  revoke(apiKeyId: string): ApiKeyRow | null {
    const sql = this.ctx.storage.sql;
    sql.exec("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE api_key_id = ?", nowIso(), apiKeyId);
    const r = sql
      .exec("SELECT api_key_id, tenant_id, name, created_at, revoked_at FROM api_keys WHERE api_key_id = ?", apiKeyId)
      .toArray()[0];
    return (r as unknown as ApiKeyRow | undefined) ?? null;
  }

  /** The tenant of a live key, by digest; null for unknown or revoked keys. */
  resolve(digest: string): string | null {
    const r = this.ctx.storage.sql
      .exec<{ tenant_id: string }>("SELECT tenant_id FROM api_keys WHERE digest = ? AND revoked_at IS NULL", digest)
      .toArray()[0];
    return r?.tenant_id ?? null;
  }

  /** The deployment's key for signed snapshot links (services/signed-urls.ts), drawn on first use and kept (storage KV, no table). */
  async urlSigningSecret(): Promise<string> {
    let s = await this.ctx.storage.get<string>("url_signing_secret");
    if (!s) {
      s = `${secret()}${secret()}`;
      await this.ctx.storage.put("url_signing_secret", s);
    }
    return s;
  }

  ping(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM api_keys").one().n;
  }
}
