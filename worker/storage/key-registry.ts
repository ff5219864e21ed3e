/**
 * @module KeyRegistry: the deployment's operator state (spec 4.17), in one SQLite-backed Durable
 * Object: the API keys of every tenant (5), the plugins' enabled state and the routing profiles
 * with their default, workspace and project rules (4.16, 4.17). Only the SHA-256 digest of a raw
 * key is stored, so a lost key cannot be recovered, only replaced; the digest resolves to exactly
 * one tenant.
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
  // Plugins and routing (4.17): a plugin without a row is enabled; a scope without a rule falls to the next.
  [
    `CREATE TABLE plugin_state (plugin_id TEXT PRIMARY KEY, enabled INTEGER NOT NULL, updated_at TEXT NOT NULL)`,
    `CREATE TABLE routing_profiles (name TEXT PRIMARY KEY, routes_json TEXT NOT NULL, updated_at TEXT NOT NULL)`,
    `CREATE TABLE routing_rules (scope TEXT PRIMARY KEY, profile TEXT, updated_at TEXT NOT NULL)`,
  ],
];

/** Where a routing rule applies: the deployment default, its one workspace, or a project. */
export type RoutingScope = "default" | "workspace" | `project:${string}`;

export interface OperatorRouting {
  profiles: { name: string; routes: Record<string, string> }[];
  /** Rules by scope; a `default` row with a null profile means the operator removed the default. */
  rules: Record<string, string | null>;
  /** Plugins whose enabled state the operator set, by id. */
  plugins: Record<string, { enabled: boolean; updated_at: string }>;
}

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

  // ---- plugins and routing (4.17) ----

  routing(): OperatorRouting {
    const sql = this.ctx.storage.sql;
    return {
      profiles: sql
        .exec<{ name: string; routes_json: string }>("SELECT name, routes_json FROM routing_profiles ORDER BY name")
        .toArray()
        .map((r) => ({ name: r.name, routes: JSON.parse(r.routes_json) })),
      rules: Object.fromEntries(
        sql
          .exec<{ scope: string; profile: string | null }>("SELECT scope, profile FROM routing_rules")
          .toArray()
          .map((r) => [r.scope, r.profile]),
      ),
      plugins: Object.fromEntries(
        sql
          .exec<{ plugin_id: string; enabled: number; updated_at: string }>("SELECT plugin_id, enabled, updated_at FROM plugin_state")
          .toArray()
          .map((r) => [r.plugin_id, { enabled: r.enabled === 1, updated_at: r.updated_at }]),
      ),
    };
  }

  setPluginEnabled(pluginId: string, enabled: boolean): void {
    this.ctx.storage.sql.exec(
      "INSERT INTO plugin_state (plugin_id, enabled, updated_at) VALUES (?, ?, ?) ON CONFLICT (plugin_id) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at",
      pluginId,
      enabled ? 1 : 0,
      nowIso(),
    );
  }

  putProfile(name: string, routes: Record<string, string>): void {
    this.ctx.storage.sql.exec(
      "INSERT INTO routing_profiles (name, routes_json, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET routes_json = excluded.routes_json, updated_at = excluded.updated_at",
      name,
      JSON.stringify(routes),
      nowIso(),
    );
  }

  setRule(scope: RoutingScope, profile: string | null): void {
    this.ctx.storage.sql.exec(
      "INSERT INTO routing_rules (scope, profile, updated_at) VALUES (?, ?, ?) ON CONFLICT (scope) DO UPDATE SET profile = excluded.profile, updated_at = excluded.updated_at",
      scope,
      profile,
      nowIso(),
    );
  }

  ping(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM api_keys").one().n;
  }
}
