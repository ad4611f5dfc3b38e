// The demo's order store: a JSON file, like examples/orders/store.go (the
// same seed and the same file layout). Every operation holds a lock file
// and writes the file atomically (a temporary file, then rename), so two
// plugin processes that overlap during a relaunch never lose a write.

import * as fs from "node:fs";
import * as path from "node:path";

export interface Refund {
  idempotency_key: string;
  amount_cents: number;
  at: string;
}

export interface Order {
  id: string;
  customer: string;
  item: string;
  total_cents: number;
  refunded_cents: number;
  status: string;
  refunds?: Refund[];
}

interface StoreFile {
  orders: Record<string, Order>;
  [other: string]: unknown;
}

/** NoOrderError is an order ID the store does not have: the model sees it. */
export class NoOrderError extends Error {}

/** RefundError is a refund the store refuses: the model sees it. */
export class RefundError extends Error {}

const lockWaitMs = 10_000;

export function seed(): StoreFile {
  const items = ["", "desk lamp", "keyboard", "monitor arm", "headphones", "webcam", "standing mat", "office chair", "notebook set", "usb hub"];
  const orders: Record<string, Order> = {};
  for (let i = 1; i <= 9; i++) {
    const id = String(i);
    orders[id] = { id, customer: "customer-" + id, item: items[i], total_cents: 1000 + 750 * i, refunded_cents: 0, status: "delivered" };
  }
  return { orders };
}

export class Store {
  constructor(readonly file: string) {
    if (!file) {
      throw new Error("store_path is required");
    }
  }

  /** open creates the directory and seeds the file when it is missing. */
  static open(file: string): Store {
    const s = new Store(file);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    s.update(() => undefined);
    return s;
  }

  get(id: string): Order {
    return this.update((f) => {
      const o = f.orders[id];
      if (!o) {
        throw new NoOrderError("no such order: " + id);
      }
      return { ...o };
    });
  }

  /** refund refunds amount (the whole remaining amount when 0) of an
   * order. A repeated idempotency key returns the refund applied before. */
  refund(id: string, amount: number, key: string): { order: Order; refund: Refund } {
    return this.update((f) => {
      const o = f.orders[id];
      if (!o) {
        throw new NoOrderError("no such order: " + id);
      }
      const prev = (o.refunds ?? []).find((r) => r.idempotency_key === key);
      if (prev) {
        return { order: { ...o }, refund: prev };
      }
      const remaining = o.total_cents - o.refunded_cents;
      if (amount === 0) {
        amount = remaining;
      }
      if (amount <= 0 || amount > remaining) {
        throw new RefundError(`cannot refund ${amount} cents of order ${id}: ${remaining} cents remain refundable`);
      }
      const r: Refund = { idempotency_key: key, amount_cents: amount, at: new Date().toISOString().replace(/\.\d+Z$/, "Z") };
      o.refunds = [...(o.refunds ?? []), r];
      o.refunded_cents += amount;
      o.status = o.refunded_cents < o.total_cents ? "partially_refunded" : "refunded";
      return { order: { ...o }, refund: r };
    });
  }

  /** update runs fn on the file's contents under the lock and writes the
   * result; a throw from fn writes nothing. */
  update<T>(fn: (f: StoreFile) => T): T {
    const release = this.lock();
    try {
      let f: StoreFile;
      let data: string | undefined;
      try {
        data = fs.readFileSync(this.file, "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
          throw err;
        }
      }
      if (data === undefined) {
        f = seed();
      } else {
        try {
          f = JSON.parse(data) as StoreFile;
        } catch (err) {
          throw new Error(`store ${this.file} is not valid JSON: ${(err as Error).message}`);
        }
        f.orders ??= {};
      }
      const out = fn(f);
      const tmp = this.file + ".tmp";
      fs.writeFileSync(tmp, JSON.stringify(f, null, 2), { mode: 0o600 });
      fs.renameSync(tmp, this.file);
      return out;
    } finally {
      release();
    }
  }

  // lock takes the lock file (created exclusively, holding this process's
  // PID). A lock whose process is gone (killed while it held it) is taken
  // over.
  private lock(): () => void {
    const lockPath = this.file + ".lock";
    const deadline = Date.now() + lockWaitMs;
    for (;;) {
      try {
        const fd = fs.openSync(lockPath, "wx", 0o600);
        fs.writeSync(fd, String(process.pid));
        fs.closeSync(fd);
        return () => fs.rmSync(lockPath, { force: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
          throw err;
        }
      }
      if (staleLock(lockPath)) {
        fs.rmSync(lockPath, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new Error(`store ${this.file}: the lock ${lockPath} is held for over ${lockWaitMs / 1000}s`);
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

function staleLock(lockPath: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(lockPath, "utf8"));
  } catch {
    return false; // gone already, or being written: try again
  }
  if (!Number.isInteger(pid) || pid <= 0) {
    return false;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

export function dollars(cents: number): string {
  const sign = cents < 0 ? "-" : "";
  cents = Math.abs(cents);
  return `${sign}$${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
}
