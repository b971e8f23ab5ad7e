# serve_port.sh — sourced by the shell scripts that start `jepa serve --port 0` with its
# stderr in a file (tests/server/run_schemathesis.sh, bench/serve_load.sh).
# serve_port LOG: wait up to 10 s for the startup line in LOG and print the port it names
# (nothing when the server did not start).
serve_port() {
    _port=
    for _ in $(seq 100); do
        _port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$1" | head -1)
        [ -n "$_port" ] && break
        sleep 0.1
    done
    echo "$_port"
}
