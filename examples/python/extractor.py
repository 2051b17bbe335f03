#!/usr/bin/env python3
"""A kledger extractor in Python.

It publishes write intents to the intents topic and reads their outcomes from the receipts
topic, the way any extractor talks to kledger:

- values: Avro single-object encoding (C3 01, the schema's CRC-64-AVRO fingerprint, then
  the binary body) of ``schemas/avro/intent.avsc``, written with fastavro;
- key: the account id; partitioner: murmur2 (Java-compatible), as the contract requires;
- the record timestamp becomes the row's ``recorded_at``.

The scenario shows the replan loop. Two intents set the user's home city, both planned
against an empty account (head 0), as two extractor workers would plan them at the same time:

1. "Lives in Lisbon" commits (commit_seq 1).
2. "Lives in Porto" comes back ``replan`` / ``slot_occupied``: the slot holds the Lisbon row,
   named in the receipt's ``stale_targets`` with its revision and content hash, next to the
   current head.
3. The extractor re-plans it as an ``amend`` of that row, against the head the receipt gave,
   with the same action id (a replanned action was never committed) — and it commits.
4. A retry of step 1 (same action id, same payload) answers ``duplicate`` with commit_seq 1.

Usage::

    pip install -r examples/python/requirements.txt
    python3 examples/python/extractor.py --bootstrap 127.0.0.1:9092 [--prefix kledger]

It prints one JSON object (the receipts, in order) and, with ``--check``, exits 1 unless the
outcomes are the four above.
"""

import argparse
import io
import json
import os
import sys
import time

import fastavro
from confluent_kafka import Consumer, Producer

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "..", "..", "schemas", "avro")

# ---- Avro single-object encoding -------------------------------------------------------

_EMPTY = 0xC15D213AA4D7A795
_TABLE = []
for _i in range(256):
    _fp = _i
    for _ in range(8):
        _fp = (_fp >> 1) ^ (_EMPTY if _fp & 1 else 0)
    _TABLE.append(_fp)


def rabin_fingerprint(data: bytes) -> int:
    """The CRC-64-AVRO (Rabin) fingerprint of the Avro specification."""
    fp = _EMPTY
    for b in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ b) & 0xFF]
    return fp


class Codec:
    """One record schema from an .avsc file: single-object encode and decode."""

    def __init__(self, name: str):
        with open(os.path.join(SCHEMAS, f"{name}.avsc"), encoding="utf-8") as f:
            raw = json.load(f)
        self.schema = fastavro.parse_schema(raw)
        canonical = fastavro.schema.to_parsing_canonical_form(raw)
        fp = rabin_fingerprint(canonical.encode("utf-8"))
        self.header = b"\xc3\x01" + fp.to_bytes(8, "little")

    def encode(self, record: dict) -> bytes:
        out = io.BytesIO()
        out.write(self.header)
        fastavro.schemaless_writer(out, self.schema, record)
        return out.getvalue()

    def decode(self, data: bytes) -> dict:
        if data[:10] != self.header:
            raise ValueError("not this schema's single-object encoding: %r" % data[:10])
        return fastavro.schemaless_reader(io.BytesIO(data[10:]), self.schema, None)


# ---- Building intents ---------------------------------------------------------------------

def assert_fact(content: str, slot: str, valid_from: int, message_id: str) -> dict:
    """An ``assert`` op of a primary-user fact (every field, as Avro wants it)."""
    return {
        "kind": "fact",
        "content": content,
        "body": None,
        "condition": None,
        "slot": slot,
        "subject": {"scope": "primary_user", "entity_id": None},
        "valid_from": valid_from,
        "valid_to": None,
        "expires_at": None,
        "assertion_class": "confirmed",
        "confidence": None,
        "curation_weight": 10,
        "sensitivity": {"level": "normal", "labels": []},
        "visibility": "private",
        "acl": {"read_team_ids": [], "read_agent_ids": [], "read_role_ids": []},
        "tags": ["python-example"],
        "lang": "en",
        "evidence": [
            {
                "source_type": "chat_message",
                "source_id": "conv_python_example",
                "source_version": "1",
                "locator": {
                    "page": None,
                    "heading": None,
                    "paragraph": None,
                    "message_id": message_id,
                    "span_start": None,
                    "span_end": None,
                },
                "quote": content,
                "checksum": None,
            }
        ],
        "embedding": None,
    }


def intent(account: str, action_id: str, head_seq: int, targets: list, ops: list) -> dict:
    tenant_id, owner_kind, owner_id = account.split("/")
    return {
        "action_id": action_id,
        "account_id": account,
        "tenant": {
            "tenant_id": tenant_id,
            "team_id": None,
            "project_id": None,
            "agent_id": None,
            "owner_kind": owner_kind,
            "owner_id": owner_id,
        },
        "source": {
            "source_id": "conv_python_example",
            "source_type": "chat_message",
            "source_version": "1",
            "author_id": owner_id,
        },
        "extractor": {"name": "python-example", "version": "1.0"},
        "write_reason": "direct_user_statement",
        "planned_against": {"head_seq": head_seq, "policy": "rebase", "targets": targets},
        # Ops are a union of records: fastavro's (name, value) tuples say which.
        "ops": ops,
    }


def op(name: str, value: dict) -> tuple:
    return ("kledger.v1." + name, value)


# ---- Talking to kledger -------------------------------------------------------------------

class Extractor:
    def __init__(self, bootstrap: str, prefix: str, group: str):
        self.topics = {t: f"{prefix}.{t}.v1" for t in ("intents", "receipts")}
        self.intents = Codec("intent")
        self.receipts = Codec("receipt")
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "partitioner": "murmur2_random",  # Java-compatible murmur2 for keyed records
                "enable.idempotence": True,
                "acks": "all",
            }
        )
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        self.consumer.subscribe([self.topics["receipts"]])
        self.seen = {}  # action_id -> receipts in arrival order

    def publish(self, record: dict, timestamp_ms: int) -> None:
        errors = []
        self.producer.produce(
            self.topics["intents"],
            key=record["account_id"].encode(),
            value=self.intents.encode(record),
            timestamp=timestamp_ms,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
        self.producer.flush(30)
        if errors:
            raise RuntimeError(f"delivery failed: {errors[0]}")

    def receipt(self, action_id: str, nth: int, timeout: float) -> dict:
        """The nth (0-based) receipt of an action (receipts are at least once, in order)."""
        deadline = time.monotonic() + timeout
        while len(self.seen.get(action_id, [])) <= nth:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no receipt #{nth} for {action_id}")
            msg = self.consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            r = self.receipts.decode(msg.value())
            self.seen.setdefault(r["action_id"], []).append(r)
        return self.seen[action_id][nth]


def scenario(x: Extractor, run_id: str, timeout: float) -> list:
    account = f"t_pyexample/user/u_{run_id}"
    t0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z: record times are the extractor's to give
    lisbon = intent(
        account, f"py-{run_id}-1", 0, [],
        [op("AssertOp", assert_fact("Lives in Lisbon", "home_city", t0, "msg_1"))],
    )
    porto = intent(
        account, f"py-{run_id}-2", 0, [],
        [op("AssertOp", assert_fact("Lives in Porto", "home_city", t0 + 60_000, "msg_2"))],
    )
    log = []
    x.publish(lisbon, t0)
    x.publish(porto, t0 + 60_000)
    first = x.receipt(lisbon["action_id"], 0, timeout)
    log.append(("assert Lisbon", first))
    second = x.receipt(porto["action_id"], 0, timeout)
    log.append(("assert Porto, planned against head 0", second))

    if second["outcome"] == "replan":
        # Re-plan against what the receipt says is current: amend the slot's holder.
        stale = second["stale_targets"]
        targets = [
            {"memory_id": s["memory_id"], "revision": s["revision"], "content_hash": s["content_hash"]}
            for s in stale
        ]
        replacement = assert_fact("Lives in Porto", "home_city", t0 + 60_000, "msg_2")
        amend = op("AmendOp", {"targets": [s["memory_id"] for s in stale], "replacement": replacement})
        replanned = intent(account, porto["action_id"], second["head_seq"], targets, [amend])
        x.publish(replanned, t0 + 120_000)
        log.append(("amend Lisbon -> Porto (replanned)", x.receipt(porto["action_id"], 1, timeout)))

    x.publish(lisbon, t0 + 180_000)  # a retry of the first action
    log.append(("retry of the Lisbon action", x.receipt(lisbon["action_id"], 1, timeout)))
    return log


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--prefix", default="kledger", help="topic prefix (kafka.topic_prefix)")
    p.add_argument("--run-id", default="demo", help="makes the account and action ids unique")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait per receipt")
    p.add_argument("--check", action="store_true", help="exit 1 unless the outcomes are as documented")
    a = p.parse_args()
    x = Extractor(a.bootstrap, a.prefix, f"python-example-{a.run_id}")
    try:
        log = scenario(x, a.run_id, a.timeout)
    finally:
        x.consumer.close()
    out = [
        {
            "step": step,
            "outcome": r["outcome"],
            "code": r["code"],
            "commit_seq": r["commit_seq"],
            "rebased": r["rebased"],
            "head_seq": r["head_seq"],
            "memory_ids": r["memory_ids"],
            "stale_targets": [s["memory_id"] for s in r["stale_targets"]],
        }
        for step, r in log
    ]
    print(json.dumps(out, indent=1))
    if a.check:
        got = [(o["outcome"], o["code"], o["commit_seq"]) for o in out]
        want = [
            ("committed", None, 1),
            ("replan", "slot_occupied", None),
            ("committed", None, 2),
            ("duplicate", None, 1),
        ]
        if got != want:
            print(f"unexpected outcomes: {got}, wanted {want}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
