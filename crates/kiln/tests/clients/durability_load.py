"""Mixed fast/safe load for the end-to-end durability test. Each worker inserts unique keys
in autocommit transactions, alternating synchronous_commit off (fast) and on (safe), and
appends one line per acknowledged commit to OUT: "<mode> <key> <txid>". Usage:
durability_load.py OUT SECONDS WORKERS BASE. Runs until the server
goes away (the test SIGKILLs it) or SECONDS pass."""

import os
import sys
import threading
import time

import psycopg

DSN = os.environ["KILN_DSN"]
OUT = sys.argv[1]
SECONDS = float(sys.argv[2])
WORKERS = int(sys.argv[3])
BASE = int(sys.argv[4])  # keys of worker w start at BASE + w * 1_000_000

lock = threading.Lock()
out = open(OUT, "a", buffering=1)


def worker(w):
    try:
        conn = psycopg.connect(DSN, autocommit=True)
    except psycopg.Error as e:
        print(f"worker {w}: cannot connect: {e}", file=sys.stderr)
        return
    key = BASE + w * 1_000_000
    deadline = time.time() + SECONDS
    try:
        while time.time() < deadline:
            key += 1
            mode = "fast" if key % 2 else "safe"
            conn.execute("SET synchronous_commit = " + ("off" if mode == "fast" else "on"))
            conn.execute("INSERT INTO d (k, w) VALUES (%s, %s)", (key, w))
            txid = conn.execute("SELECT kiln_last_txid()").fetchone()[0]
            with lock:
                out.write(f"{mode} {key} {txid}\n")
    except psycopg.OperationalError:
        return  # the server went away


threads = [threading.Thread(target=worker, args=(w,)) for w in range(WORKERS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
