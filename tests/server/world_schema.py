"""world_schema.py — docs/openapi.yaml narrowed to one LeWM model's shapes, for fuzzing the
world routes' success paths (tests/server/run_schemathesis.sh, positive mode only).

usage: python world_schema.py OPENAPI.yaml OUT.json EMB_DIM ACTION_DIM

The published schema cannot know a model's widths, so a generated /v1/predict, /v1/rollout or
/v1/plan body almost never has embeddings EMB_DIM wide and is refused with 400. This copy
pins the request bodies to what the LeWM model accepts: one frame of history as nested lists
(EMB_DIM wide, values in [-4, 4]), ACTION_DIM-wide actions, 1 or 2 rollout steps (half of the
rollouts then have the T + steps - 1 actions they need), small planner settings, always given
(a plan takes milliseconds, where the defaults' 300 x 30 rollouts may outlast the server's
--timeout-s on a loaded machine), and no keys the LeWM routes refuse. The rest of what the
server refuses with 400 (an action count, 'elites' above 'samples', empty bounds) it still
may generate; run_schemathesis.sh requires 200s from every route as well.
"""
import json
import sys

import yaml


def rows(n_min, n_max, width):
    num = {"type": "number", "minimum": -4, "maximum": 4}
    row = {"type": "array", "minItems": width, "maxItems": width, "items": num}
    return {"type": "array", "minItems": n_min, "maxItems": n_max, "items": row}


def main():
    src, out, d, a = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(src) as f:
        doc = yaml.safe_load(f)
    sc = doc["components"]["schemas"]
    enc = sc["PredictRequest"]["properties"]["encoding_format"]
    vec = {"type": "array", "minItems": d, "maxItems": d,
           "items": {"type": "number", "minimum": -4, "maximum": 4}}
    sc["PredictRequest"] = {
        "type": "object", "additionalProperties": False, "required": ["emb", "actions"],
        "properties": {"encoding_format": enc, "emb": rows(1, 1, d), "actions": rows(1, 1, a)}}
    sc["RolloutRequest"] = {
        "type": "object", "additionalProperties": False, "required": ["emb", "actions", "steps"],
        "properties": {"encoding_format": enc, "emb": rows(1, 1, d), "actions": rows(1, 2, a),
                       "steps": {"type": "integer", "minimum": 1, "maximum": 2}}}
    plan = sc["PlanRequest"]["properties"]
    small = {"horizon": 3, "samples": 16, "iters": 3, "elites": 4}
    props = {"encoding_format": enc, "history": vec, "goal": vec,
             "momentum": plan["momentum"], "seed": plan["seed"],
             "std": {"type": "number", "minimum": 0, "maximum": 10},
             "bounds": {"type": "array", "minItems": 2, "maxItems": 2,
                        "items": {"type": "number", "minimum": -10, "maximum": 10}}}
    for k, hi in small.items():
        props[k] = {"type": "integer", "minimum": 1, "maximum": hi}
    sc["PlanRequest"] = {"type": "object", "additionalProperties": False,
                         "required": ["history", "goal", *small], "properties": props}
    with open(out, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
