/**
 * The chaos fleet of scripts/runner-chaos.ts on fake runners: when it kills, whom, and what it
 * reports (the end-to-end use is test/e2e/runner-kills.test.ts and `npm run bench -- chaos`).
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { type Killable, chaos } from "../scripts/runner-chaos";

interface Fake extends Killable {
  busy: boolean;
  died: string | null;
  killed: boolean;
  register(): void;
}

function fake(name: string): Fake {
  let register = () => {};
  const ready = new Promise<void>((r) => (register = r));
  const f: Fake = {
    name,
    busy: false,
    died: null,
    killed: false,
    ready,
    register: () => register(),
    kill: () => {
      f.killed = true;
    },
  };
  return f;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

it("counts the time between kills from when the whole fleet has registered, and waits for each replacement", async () => {
  const started: Fake[] = [];
  const fleet = chaos({ size: 2, minMs: 1000, maxMs: 1000, start: (i) => started[started.push(fake(`r${i}`)) - 1]! });
  await vi.advanceTimersByTimeAsync(5000);
  expect(fleet.stats.kills).toBe(0); // nobody registered yet: a slow start is not time to compute
  started[0]!.register();
  started[1]!.register();
  await vi.advanceTimersByTimeAsync(1000);
  expect(fleet.stats.kills).toBe(1);
  expect(started).toHaveLength(3);
  await vi.advanceTimersByTimeAsync(5000);
  expect(fleet.stats.kills).toBe(1); // the replacement has not registered
  started[2]!.register();
  await vi.advanceTimersByTimeAsync(1000);
  expect(fleet.stats.kills).toBe(2);
  expect(await fleet.stop()).toEqual([]);
  expect(started.every((r) => r.killed)).toBe(true);
});

it("kills a busy runner when one is busy, or any runner alike with preferBusy false", async () => {
  const victims = (preferBusy: boolean) => {
    const started: Fake[] = [];
    const fleet = chaos({
      size: 4,
      minMs: 10,
      maxMs: 10,
      seed: 7,
      preferBusy,
      start: (i) => {
        const f = fake(`r${i}`);
        f.register();
        f.busy = i === 0;
        return started[started.push(f) - 1]!;
      },
    });
    return { fleet, started };
  };
  const busyFirst = victims(true);
  await vi.advanceTimersByTimeAsync(10);
  expect(busyFirst.started[0]!.killed).toBe(true);
  expect(busyFirst.fleet.stats.busyKills).toBe(1);
  await busyFirst.fleet.stop();

  const anyone = victims(false);
  await vi.advanceTimersByTimeAsync(200);
  await anyone.fleet.stop();
  // Many kills over 4 runners of which one was busy: idle ones were killed too.
  expect(anyone.fleet.stats.kills).toBeGreaterThanOrEqual(10);
  expect(anyone.started.filter((r) => r.killed && !r.busy).length).toBeGreaterThan(0);
});

it("reports and replaces a runner that ended by itself", async () => {
  const started: Fake[] = [];
  const fleet = chaos({
    size: 1,
    minMs: 1000,
    maxMs: 1000,
    start: (i) => {
      const f = fake(`r${i}`);
      f.register();
      return started[started.push(f) - 1]!;
    },
  });
  await vi.advanceTimersByTimeAsync(0);
  started[0]!.died = "r0 exited by itself (code 1)";
  await vi.advanceTimersByTimeAsync(1000);
  // Replaced (r1), then a kill of the replacement (r2 starts).
  expect(started.map((r) => r.name)).toEqual(["r0", "r1", "r2"]);
  expect(started[1]!.killed).toBe(true);
  expect(await fleet.stop()).toEqual(["r0 exited by itself (code 1)"]);
});
