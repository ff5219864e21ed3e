/** @module Tiny DOM helpers: element creation, required lookups, status messages. */
import { describeError } from "../api/client";

type Attrs = Record<string, string | number | boolean | undefined | ((ev: Event) => void)>;

/** `h("button", {type: "button", onclick: f}, "Cancel")`; `false`/`undefined` attributes are left out. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  el.append(...children);
  return el;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from index.html`);
  return el as T;
}

/** Shows a message in a status region (role=status or alert): `error` styles it and says why. */
export function say(el: HTMLElement, message: string, kind: "info" | "error" | "ok" = "info"): void {
  el.textContent = message;
  el.dataset.kind = kind;
  el.hidden = message === "";
}

export function sayError(el: HTMLElement, e: unknown, prefix = ""): void {
  say(el, `${prefix}${describeError(e)}`, "error");
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(0)} KB`;
  return `${(n / 1024 ** 2).toFixed(1)} MB`;
}
