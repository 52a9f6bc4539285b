#!/usr/bin/env python3
"""A run lock written from seed 000 (CR-NEXUS-024) alone, as its users'
Python would be: <NEXUSCORE_RUN_LOCK_DIR>/<sha256(run_id)>.lock created with
O_CREAT|O_EXCL and a JSON payload {run_id, lock_id, pid, created_at,
expires_at}; stale (expires_at < now, or unparseable) moved to
*.stale.<ts>; release only while the file carries our lock_id.

Usage: run_lock.py acquire RUN_ID   -> prints "ok LOCK_ID" or "conflict REASON"
       run_lock.py hold RUN_ID SECS -> acquire, print, sleep, release
The integration tests use it to check that withlock and this writer each
respect the other's locks.
"""
import hashlib
import json
import os
import sys
import time
import uuid


def lock_dir():
    return os.environ["NEXUSCORE_RUN_LOCK_DIR"]


def ttl():
    return int(os.environ.get("NEXUSCORE_RUN_LOCK_TTL_SECONDS", "30"))


def lock_path(run_id):
    return os.path.join(lock_dir(), hashlib.sha256(run_id.encode()).hexdigest() + ".lock")


def try_acquire_run_lock(run_id):
    os.makedirs(lock_dir(), exist_ok=True)
    path = lock_path(run_id)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                with open(path) as f:
                    payload = json.load(f)
                stale = payload["expires_at"] < time.time()
            except (ValueError, KeyError, OSError):
                stale = True
            if not stale:
                return False, "LOCK_HELD", None
            try:
                os.rename(path, "%s.stale.%d" % (path, int(time.time())))
            except OSError:
                return False, "LOCK_CONFLICT", None
            continue
        lock_id = uuid.uuid4().hex
        now = time.time()
        payload = {"run_id": run_id, "lock_id": lock_id, "pid": os.getpid(),
                   "created_at": now, "expires_at": now + ttl()}
        try:
            os.write(fd, json.dumps(payload).encode())
        except OSError:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        return True, None, lock_id
    return False, "LOCK_CONFLICT", None


def release_run_lock(run_id, lock_id):
    path = lock_path(run_id)
    try:
        with open(path) as f:
            if json.load(f).get("lock_id") != lock_id:
                return
    except (ValueError, OSError):
        return
    os.unlink(path)


def main():
    cmd, run_id = sys.argv[1], sys.argv[2]
    ok, reason, lock_id = try_acquire_run_lock(run_id)
    print("ok " + lock_id if ok else "conflict " + reason, flush=True)
    if ok and cmd == "hold":
        time.sleep(float(sys.argv[3]))
        release_run_lock(run_id, lock_id)
    return 0 if ok else 75


if __name__ == "__main__":
    sys.exit(main())
