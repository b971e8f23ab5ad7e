#!/bin/sh
# run_schemathesis.sh — fuzz `jepa serve`'s API from its OpenAPI document (docs/openapi.yaml)
# with schemathesis (PyPI), against a live server on loopback, for a bounded number of
# examples and time; then SIGTERM, and the server must exit 0 (no crash, no hang).
# usage: run_schemathesis.sh JEPA MODEL.gguf SCHEMATHESIS WORK_DIR
# Every check but positive_data_acceptance runs: the schema cannot say "base64 of a
# decodable image", so a schema-valid random string is rightly refused with 400.
set -u
JEPA=$1 MODEL=$2 ST=$3 WORK=$4
mkdir -p "$WORK"
KEY=fuzz-key-42
JEPA_API_KEY=$KEY "$JEPA" serve -m "$MODEL" --port 0 -t 2 -q --max-body-mb 1 --timeout-s 10 \
    2>"$WORK/serve.log" &
pid=$!
. "$(dirname "$0")/serve_port.sh"
port=$(serve_port "$WORK/serve.log")
[ -n "$port" ] || { echo "FAIL the server did not start"; cat "$WORK/serve.log"; kill $pid; exit 1; }
timeout 300 "$ST" run "$(dirname "$0")/../../docs/openapi.yaml" --url "http://127.0.0.1:$port" \
    -H "Authorization: Bearer $KEY" -n 25 --seed 7 --max-time 45 --checks all \
    --exclude-checks positive_data_acceptance --request-timeout 20 >"$WORK/schemathesis.log" 2>&1
st=$?
kill -TERM $pid
timeout 60 sh -c "while kill -0 $pid 2>/dev/null; do sleep 0.1; done"
wait $pid
rc=$?
tail -25 "$WORK/schemathesis.log"
[ $st -eq 0 ] || { echo "FAIL schemathesis found failures (exit $st; $WORK/schemathesis.log)"; exit 1; }
[ $rc -eq 0 ] || { echo "FAIL the server exited $rc after the fuzzing"; tail -5 "$WORK/serve.log"; exit 1; }
echo "ok   schemathesis: no failures; the server exited 0"
