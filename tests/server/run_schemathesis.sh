#!/bin/sh
# run_schemathesis.sh — fuzz `jepa serve`'s API from its OpenAPI document (docs/openapi.yaml)
# with schemathesis (PyPI), against a live server on loopback, for a bounded number of
# examples and time; then SIGTERM, and the server must exit 0 (no crash, no hang).
# usage: run_schemathesis.sh JEPA MODEL.gguf SCHEMATHESIS WORK_DIR [EMB_DIM ACTION_DIM]
# With EMB_DIM and ACTION_DIM (a LeWM model's widths), only the world routes are fuzzed, from
# the schema narrowed to that model's shapes by world_schema.py (with SCHEMATHESIS's Python),
# in positive mode, so that their success paths run as well as their refusals; the run
# without them covers every route's refusals of schema-invalid requests.
# Every check but positive_data_acceptance runs: the schema cannot say "base64 of a
# decodable image", so a schema-valid random string is rightly refused with 400.
set -u
JEPA=$1 MODEL=$2 ST=$3 WORK=$4 EMB_DIM=${5:-} ACTION_DIM=${6:-}
mkdir -p "$WORK"
SCHEMA=$(dirname "$0")/../../docs/openapi.yaml
set --
if [ -n "$EMB_DIM" ]; then
    "$(dirname "$ST")/python" "$(dirname "$0")/world_schema.py" "$SCHEMA" "$WORK/world.json" "$EMB_DIM" "$ACTION_DIM" ||
        { echo "FAIL could not narrow the schema"; exit 1; }
    SCHEMA=$WORK/world.json
    set -- --mode positive --include-path-regex '^/v1/(predict|rollout|plan)$'
fi
KEY=fuzz-key-42
JEPA_API_KEY=$KEY "$JEPA" serve -m "$MODEL" --port 0 -t 2 -q --max-body-mb 1 --timeout-s 10 \
    2>"$WORK/serve.log" &
pid=$!
. "$(dirname "$0")/serve_port.sh"
port=$(serve_port "$WORK/serve.log")
[ -n "$port" ] || { echo "FAIL the server did not start"; cat "$WORK/serve.log"; kill $pid; exit 1; }
timeout 300 "$ST" run "$SCHEMA" "$@" --url "http://127.0.0.1:$port" \
    -H "Authorization: Bearer $KEY" -n 25 --seed 7 --max-time 45 --checks all \
    --exclude-checks positive_data_acceptance --request-timeout 20 >"$WORK/schemathesis.log" 2>&1
st=$?
ok200=""
if [ -n "$EMB_DIM" ]; then
    # the success paths ran: every world route answered 200 at least once (/metrics counts)
    ok200=$("$(dirname "$ST")/python" -c '
import re, sys, urllib.request
rq = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
m = urllib.request.urlopen(rq, timeout=10).read().decode()
for r in ("predict", "rollout", "plan"):
    n = re.search(r"jepa_requests_total\{route=\"/v1/%s\",status=\"200\"\} (\d+)" % r, m)
    print("/v1/%s:%s" % (r, n.group(1) if n else 0), end=" ")
' "http://127.0.0.1:$port/metrics" "$KEY" 2>&1)
fi
kill -TERM $pid
timeout 60 sh -c "while kill -0 $pid 2>/dev/null; do sleep 0.1; done"
wait $pid
rc=$?
tail -25 "$WORK/schemathesis.log"
[ $st -eq 0 ] || { echo "FAIL schemathesis found failures (exit $st; $WORK/schemathesis.log)"; exit 1; }
[ $rc -eq 0 ] || { echo "FAIL the server exited $rc after the fuzzing"; tail -5 "$WORK/serve.log"; exit 1; }
if [ -n "$EMB_DIM" ]; then
    echo "$ok200" | grep -Eq '^/v1/predict:[1-9][0-9]* /v1/rollout:[1-9][0-9]* /v1/plan:[1-9][0-9]* $' ||
        { echo "FAIL a world route never answered 200 (answers 200: $ok200)"; exit 1; }
    echo "     answers 200: $ok200"
fi
echo "ok   schemathesis: no failures; the server exited 0"
