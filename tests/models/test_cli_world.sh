#!/bin/sh
# test_cli_world.sh — `jepa predict --emb/--actions` (LeWM) and `--tokens/--actions/--states`
# (V-JEPA 2-AC), `jepa rollout` and `jepa plan` (cli/cmd_world.c) on the fixtures
# (tests/data/lewm_wm, ac_wm: the float64 references of tests/gen/gen_lewm.py, gen_ac.py),
# and their refusals: one stderr line, exit 1 for bad files and values, 2 for usage, no
# output file left behind.
# usage: test_cli_world.sh JEPA DATA_DIR WORK_DIR NPY_COMPARE
set -u
JEPA=$1 DATA=$2 WORK=$3/cli_world CMP_BIN=$4
JEPA_BIN=$JEPA
npy_compare() { ${MESON_EXE_WRAPPER:-} "$CMP_BIN" "$@"; }
. "$(dirname "$0")/../cli_prelude.sh"
# expect CODE DESCRIPTION CMD... : the exit code; for failures one stderr line and no -o file
expect() {
    want=$1 what=$2
    shift 2
    rm -f "$WORK/o.npy"
    "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
    rc=$?
    lines=$(wc -l <"$WORK/err.txt")
    if [ "$rc" -ne "$want" ]; then bad "$what (exit $rc, expected $want)"; cat "$WORK/err.txt"; return; fi
    if [ "$want" -ne 0 ] && [ "$lines" -ne 1 ]; then bad "$what ($lines stderr lines, expected 1)"; cat "$WORK/err.txt"; return; fi
    if [ "$want" -ne 0 ] && [ -e "$WORK/o.npy" ]; then bad "$what (an output file was left)"; return; fi
    ok "$what"
}
has() { grep -q "$1" "$WORK/err.txt" && ok "  names: $1" || { bad "  stderr lacks '$1'"; cat "$WORK/err.txt"; }; }
W=$DATA/lewm_wm M=$DATA/lewm_wm/model_a.gguf

# predict and rollout against the reference, [B, T, D] inputs
expect 0 "predict B x T" jepa predict -q -m "$M" --emb "$W/emb_a.npy" --actions "$W/actions_a.npy" -o "$WORK/p.npy"
npy_compare "$WORK/p.npy" "$W/pred_a.npy" 0.99999 1e-4 && ok "predict matches the reference" || bad "predict matches the reference"
expect 0 "rollout B x T0 + K" jepa rollout -q -m "$M" --emb "$W/rollout_emb_a.npy" --actions "$W/rollout_actions_a.npy" --steps 4 -o "$WORK/t.npy"
npy_compare "$WORK/t.npy" "$W/traj_a.npy" 0.99999 1e-4 && ok "rollout matches the reference" || bad "rollout matches the reference"
expect 0 "rollout, model b (5-frame window)" jepa rollout -q -m "$W/model_b.gguf" --emb "$W/rollout_emb_b.npy" --actions "$W/rollout_actions_b.npy" --steps 6 -o "$WORK/tb.npy"
npy_compare "$WORK/tb.npy" "$W/traj_b.npy" 0.99999 1e-4 && ok "rollout b matches the reference" || bad "rollout b matches the reference"

# small float32 arrays for the refusals: mk FILE "d0, d1" [nan]
if command -v python3 >/dev/null; then
mk() {
    python3 - "$@" <<'PY'
import struct, sys
path, shape = sys.argv[1], tuple(int(x) for x in sys.argv[2].split(","))
n = 1
for s in shape: n *= s
vals = [0.1 * ((i * 7) % 5) - 0.2 for i in range(n)]
if len(sys.argv) > 3: vals[1] = float("nan")
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
h += " " * (63 - len(h) % 64) + "\n"
open(path, "wb").write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + struct.pack("<%df" % n, *vals))
PY
}
mk "$WORK/e3.npy" 3,64; mk "$WORK/a3.npy" 3,10; mk "$WORK/a3w.npy" 3,5; mk "$WORK/a2.npy" 2,10
mk "$WORK/e4.npy" 4,64; mk "$WORK/a4.npy" 4,10; mk "$WORK/a3nan.npy" 3,10 nan; mk "$WORK/e3w.npy" 3,48
expect 0 "predict T x D (2-D)" jepa predict -q -m "$M" --emb "$WORK/e3.npy" --actions "$WORK/a3.npy" -o "$WORK/o.npy"
expect 1 "actions of the wrong width" jepa predict -m "$M" --emb "$WORK/e3.npy" --actions "$WORK/a3w.npy" -o "$WORK/o.npy"
has "jepa.pred.action_dim"
expect 1 "embeddings of the wrong width" jepa predict -m "$M" --emb "$WORK/e3w.npy" --actions "$WORK/a3.npy" -o "$WORK/o.npy"
expect 1 "fewer actions than frames" jepa predict -m "$M" --emb "$WORK/e3.npy" --actions "$WORK/a2.npy" -o "$WORK/o.npy"
expect 1 "more frames than the window" jepa predict -m "$M" --emb "$WORK/e4.npy" --actions "$WORK/a4.npy" -o "$WORK/o.npy"
has "jepa.pred.n_frames"
expect 1 "a NaN action" jepa predict -m "$M" --emb "$WORK/e3.npy" --actions "$WORK/a3nan.npy" -o "$WORK/o.npy"
has "NaN"
expect 1 "2-D embeddings, 3-D actions" jepa predict -m "$M" --emb "$WORK/e3.npy" --actions "$W/actions_a.npy" -o "$WORK/o.npy"
expect 1 "rollout: actions not T + K - 1" jepa rollout -m "$M" --emb "$WORK/e3.npy" --actions "$WORK/a3.npy" --steps 2 -o "$WORK/o.npy"
has "T + K - 1"
expect 0 "rollout: 3 + 2 - 1 actions, 2-D" jepa rollout -q -m "$M" --emb "$WORK/e3.npy" --actions "$WORK/a4.npy" --steps 2 -o "$WORK/o.npy"
fi
expect 2 "rollout --steps 0" jepa rollout -m "$M" --emb "$W/emb_a.npy" --actions "$W/actions_a.npy" --steps 0 -o "$WORK/o.npy"
expect 2 "rollout --steps 2x" jepa rollout -m "$M" --emb "$W/emb_a.npy" --actions "$W/actions_a.npy" --steps 2x -o "$WORK/o.npy"
expect 2 "rollout --steps 10^9" jepa rollout -m "$M" --emb "$W/emb_a.npy" --actions "$W/actions_a.npy" --steps 1000000000 -o "$WORK/o.npy"
expect 2 "rollout without --steps" jepa rollout -m "$M" --emb "$W/emb_a.npy" --actions "$W/actions_a.npy" -o "$WORK/o.npy"
expect 2 "output = an input" jepa predict -m "$M" --emb "$W/emb_a.npy" --actions "$W/actions_a.npy" -o "$W/emb_a.npy"
expect 1 "a model without a world-model predictor" jepa predict -m "$DATA/vjepa2_tiny/model.gguf" --emb "$W/emb_a.npy" --actions "$W/actions_a.npy" -o "$WORK/o.npy"
has "not lewm"
# V-JEPA 2-AC: the float64 transcription of Meta's predictor (tests/gen/gen_ac.py)
AC=$DATA/ac_wm
for c in a b; do
    expect 0 "ac predict, config $c" jepa predict -q -m "$AC/model_$c.gguf" --tokens "$AC/tokens_$c.npy" --actions "$AC/actions_$c.npy" --states "$AC/states_$c.npy" -o "$WORK/ac_$c.npy"
    npy_compare "$WORK/ac_$c.npy" "$AC/pred_$c.npy" 0.99999 1e-4 && ok "ac $c matches the reference" || bad "ac $c matches the reference"
done
expect 1 "ac: token rows not F x tokens per frame" jepa predict -m "$AC/model_a.gguf" --tokens "$AC/tokens_b.npy" --actions "$AC/actions_a.npy" --states "$AC/states_a.npy" -o "$WORK/o.npy"
has "tokens per frame"
expect 1 "ac: states of the wrong width" jepa predict -m "$AC/model_a.gguf" --tokens "$AC/tokens_a.npy" --actions "$AC/actions_a.npy" --states "$AC/states_b.npy" -o "$WORK/o.npy"
has "jepa.pred.state_dim"
expect 2 "ac model given LeWM inputs" jepa predict -m "$AC/model_a.gguf" --emb "$W/emb_a.npy" --actions "$AC/actions_a.npy" -o "$WORK/o.npy"
expect 2 "LeWM model given AC inputs" jepa predict -m "$M" --tokens "$AC/tokens_a.npy" --actions "$W/actions_a.npy" --states "$AC/states_a.npy" -o "$WORK/o.npy"
expect 2 "--tokens without --states" jepa predict -m "$AC/model_a.gguf" --tokens "$AC/tokens_a.npy" --actions "$AC/actions_a.npy" -o "$WORK/o.npy"
# AC rollout: Meta's planner's steps (layer-normed tokens, the pose rule), the window sliding
expect 0 "ac rollout, 2 frames + 4 steps" jepa rollout -q -m "$AC/model_a.gguf" --tokens "$AC/rollout_tokens_a.npy" --states "$AC/rollout_states_a.npy" \
    --actions "$AC/rollout_actions_a.npy" --steps 4 -o "$WORK/act.npy" --traj-states "$WORK/acs.npy"
npy_compare "$WORK/act.npy" "$AC/rollout_traj_a.npy" 0.99999 1e-4 && ok "ac rollout matches the reference" || bad "ac rollout matches the reference"
npy_compare "$WORK/acs.npy" "$AC/rollout_traj_states_a.npy" 0.99999 1e-5 && ok "  and its states scipy's pose rule" || bad "  and its states scipy's pose rule"
expect 1 "ac rollout: actions not F + K - 1" jepa rollout -m "$AC/model_a.gguf" --tokens "$AC/rollout_tokens_a.npy" --states "$AC/rollout_states_a.npy" \
    --actions "$AC/rollout_actions_a.npy" --steps 3 -o "$WORK/o.npy"
has "F + K - 1"
expect 1 "ac rollout without the 7-d pose rule (4-d actions, 3-d states)" jepa rollout -m "$AC/model_b.gguf" --tokens "$AC/tokens_b.npy" --states "$AC/states_b.npy" \
    --actions "$AC/actions_b.npy" --steps 1 -o "$WORK/o.npy"
has "pose rule"
expect 2 "--traj-states on a LeWM rollout" jepa rollout -m "$M" --emb "$W/rollout_emb_a.npy" --actions "$W/rollout_actions_a.npy" --steps 4 -o "$WORK/o.npy" --traj-states "$WORK/s.npy"
expect 1 "a missing input" jepa predict -m "$M" --emb "$WORK/none.npy" --actions "$W/actions_a.npy" -o "$WORK/o.npy"
expect 0 "rollout --help" jepa rollout --help

# plan: the CEM of the generator (same stream, same parameters) from tokens; images too
P="--horizon 2 --samples 24 --iters 4 --elites 6 --seed 77"
expect 0 "plan from tokens" jepa plan -q -m "$M" --start-tokens "$W/plan_hist_a.npy" --start-actions "$W/plan_past_a.npy" \
    --goal-tokens "$W/plan_goal_a.npy" $P -o "$WORK/plan.npy" --energies "$WORK/en.npy"
npy_compare "$WORK/plan.npy" "$W/plan_actions_a.npy" 0.99999 1e-4 && ok "the plan is the reference CEM's" || bad "the plan is the reference CEM's"
npy_compare "$WORK/en.npy" "$W/plan_energies_a.npy" 0.99999 1e-4 && ok "  and so are its energies" || bad "  and so are its energies"
expect 0 "plan prints its progress" jepa plan -m "$M" --start-tokens "$W/plan_hist_a.npy" --start-actions "$W/plan_past_a.npy" \
    --goal-tokens "$W/plan_goal_a.npy" $P -o "$WORK/plan.npy"
[ "$(grep -c "best energy" "$WORK/err.txt")" -eq 4 ] && grep -q "energy of the plan" "$WORK/err.txt" && ok "  4 iterations and the final energy" || bad "  4 iterations and the final energy"
if jepa embed -q -m "$M" -i "$DATA/../input/data/e2e.png" --pool lewm -o "$WORK/e.npy" 2>/dev/null; then
    expect 0 "plan between two images" jepa plan -q -m "$M" --start "$DATA/../input/data/e2e.png" \
        --goal "$DATA/../input/data/e2e.png" --horizon 2 --samples 16 --iters 2 --elites 4 --bounds -1,1 -o "$WORK/plan.npy"
fi
expect 2 "plan --elites > --samples" jepa plan -m "$M" --start-tokens "$W/plan_hist_a.npy" --goal-tokens "$W/plan_goal_a.npy" --samples 4 --elites 5 -o "$WORK/o.npy"
expect 2 "plan --bounds 1,0" jepa plan -m "$M" --start-tokens "$W/plan_hist_a.npy" --goal-tokens "$W/plan_goal_a.npy" --bounds 1,0 -o "$WORK/o.npy"
expect 2 "plan --std -1" jepa plan -m "$M" --start-tokens "$W/plan_hist_a.npy" --goal-tokens "$W/plan_goal_a.npy" --std -1 -o "$WORK/o.npy"
expect 2 "plan --horizon 0" jepa plan -m "$M" --start-tokens "$W/plan_hist_a.npy" --goal-tokens "$W/plan_goal_a.npy" --horizon 0 -o "$WORK/o.npy"
expect 2 "plan without a goal" jepa plan -m "$M" --start-tokens "$W/plan_hist_a.npy" -o "$WORK/o.npy"
expect 1 "plan: a history without its past actions" jepa plan -m "$M" --start-tokens "$W/plan_hist_a.npy" --goal-tokens "$W/plan_goal_a.npy" -o "$WORK/o.npy"
has "start-actions"
expect 1 "plan: a goal of the wrong width" jepa plan -m "$M" --start-tokens "$W/plan_goal_a.npy" --goal-tokens "$W/actions_a.npy" -o "$WORK/o.npy"
expect 1 "plan on a model without a world-model predictor" jepa plan -m "$DATA/vjepa2_tiny/model.gguf" --start-tokens "$W/plan_goal_a.npy" --goal-tokens "$W/plan_goal_a.npy" -o "$WORK/o.npy"

# AC plan: the generator's CEM (Meta's action box and momentum, jepa.c's stream)
AP="--samples 24 --iters 3 --elites 6"
expect 0 "ac plan from tokens" jepa plan -q -m "$AC/model_a.gguf" --start-tokens "$AC/plan_tokens_a.npy" --start-states "$AC/plan_states_a.npy" \
    --goal-tokens "$AC/plan_goal_a.npy" $AP -o "$WORK/acplan.npy" --energies "$WORK/acen.npy"
npy_compare "$WORK/acplan.npy" "$AC/plan_actions_a.npy" 0.99999 1e-4 && ok "the ac plan is the reference CEM's" || bad "the ac plan is the reference CEM's"
npy_compare "$WORK/acen.npy" "$AC/plan_energies_a.npy" 0.99999 1e-4 && ok "  and so are its energies" || bad "  and so are its energies"
if jepa embed -q -m "$AC/model_a.gguf" -i "$DATA/../input/data/e2e.png" --pool none -o "$WORK/e.npy" 2>/dev/null; then
    expect 0 "ac plan between two images" jepa plan -m "$AC/model_a.gguf" --start "$DATA/../input/data/e2e.png" --start-states "$AC/plan_states_a.npy" \
        --goal "$DATA/../input/data/e2e.png" --samples 8 --iters 2 --elites 2 --maxnorm 0.1 -o "$WORK/acplan.npy"
    [ "$(grep -c "best energy" "$WORK/err.txt")" -eq 2 ] && ok "  2 iterations printed" || bad "  2 iterations printed"
fi
expect 2 "ac plan without --start-states" jepa plan -m "$AC/model_a.gguf" --start-tokens "$AC/plan_tokens_a.npy" --goal-tokens "$AC/plan_goal_a.npy" -o "$WORK/o.npy"
expect 2 "ac plan with LeWM's --bounds" jepa plan -m "$AC/model_a.gguf" --start-tokens "$AC/plan_tokens_a.npy" --start-states "$AC/plan_states_a.npy" \
    --goal-tokens "$AC/plan_goal_a.npy" --bounds -1,1 -o "$WORK/o.npy"
expect 2 "plan --momentum 2" jepa plan -m "$AC/model_a.gguf" --start-tokens "$AC/plan_tokens_a.npy" --start-states "$AC/plan_states_a.npy" \
    --goal-tokens "$AC/plan_goal_a.npy" --momentum 2 -o "$WORK/o.npy"
expect 1 "ac plan: states not [T, 7]" jepa plan -m "$AC/model_a.gguf" --start-tokens "$AC/plan_tokens_a.npy" --start-states "$AC/rollout_states_a.npy" \
    --goal-tokens "$AC/plan_goal_a.npy" -o "$WORK/o.npy"
expect 1 "ac plan: a goal of the wrong size" jepa plan -m "$AC/model_a.gguf" --start-tokens "$AC/plan_tokens_a.npy" --start-states "$AC/plan_states_a.npy" \
    --goal-tokens "$AC/rollout_tokens_a.npy" -o "$WORK/o.npy"
expect 1 "ac plan: a 4-d action model" jepa plan -m "$AC/model_b.gguf" --start-tokens "$AC/tokens_b.npy" --start-states "$AC/states_b.npy" \
    --goal-tokens "$AC/tokens_b.npy" -o "$WORK/o.npy"

# several outputs: all written or none. The second's folder missing leaves no first output
# (refused before anything is renamed), and the first's the second.
expect 1 "plan: --energies in a missing folder" jepa plan -q -m "$M" --start-tokens "$W/plan_hist_a.npy" --start-actions "$W/plan_past_a.npy" \
    --goal-tokens "$W/plan_goal_a.npy" $P -o "$WORK/o.npy" --energies "$WORK/nodir/en.npy"
has "nodir"
expect 1 "plan: -o in a missing folder" jepa plan -q -m "$M" --start-tokens "$W/plan_hist_a.npy" --start-actions "$W/plan_past_a.npy" \
    --goal-tokens "$W/plan_goal_a.npy" $P -o "$WORK/nodir/o.npy" --energies "$WORK/o.npy"
expect 1 "ac rollout: --traj-states in a missing folder" jepa rollout -m "$AC/model_a.gguf" --tokens "$AC/rollout_tokens_a.npy" \
    --states "$AC/rollout_states_a.npy" --actions "$AC/rollout_actions_a.npy" --steps 4 -o "$WORK/o.npy" --traj-states "$WORK/nodir/s.npy"
has "nodir"
expect 1 "ac rollout: -o in a missing folder" jepa rollout -m "$AC/model_a.gguf" --tokens "$AC/rollout_tokens_a.npy" \
    --states "$AC/rollout_states_a.npy" --actions "$AC/rollout_actions_a.npy" --steps 4 -o "$WORK/nodir/t.npy" --traj-states "$WORK/o.npy"
left=$(find "$WORK" -name '.*.npy.*' | wc -l)
[ "$left" -eq 0 ] && ok "  no temporary left beside the outputs" || bad "  $left temporaries left beside the outputs"
# a 0-d array as the start or the goal: one line each
# (a 0-d float32 .npy holding 1.0: the 10-byte preamble, a 118-byte header, 4 bytes)
printf '\223NUMPY\001\000v\000%s' "{'descr': '<f4', 'fortran_order': False, 'shape': (), }" >"$WORK/zero_d.npy"
head -c 62 /dev/zero | tr '\000' ' ' >>"$WORK/zero_d.npy"
printf '\n\000\000\200\077' >>"$WORK/zero_d.npy"
expect 1 "plan: a 0-d --start-tokens" jepa plan -m "$M" --start-tokens "$WORK/zero_d.npy" --goal-tokens "$W/plan_goal_a.npy" -o "$WORK/o.npy"
has "0-d"
expect 1 "plan: a 0-d --goal-tokens" jepa plan -m "$M" --start-tokens "$W/plan_goal_a.npy" --goal-tokens "$WORK/zero_d.npy" -o "$WORK/o.npy"

# the benchmark runs on both kinds (its figures are not checked here: docs/world-models.md)
expect 0 "bench world, LeWM" jepa bench world -m "$M" --samples 8 --horizon 2 --quick --json -t 1
grep -q '"bench": "world"' "$WORK/out.txt" && ok "  one JSON line" || bad "  one JSON line"
expect 0 "bench world, V-JEPA 2-AC" jepa bench world -m "$AC/model_a.gguf" --samples 4 --quick --json -t 1
grep -q '"bench": "world_ac"' "$WORK/out.txt" && ok "  one JSON line" || bad "  one JSON line"
expect 1 "bench world, no world model" jepa bench world -m "$DATA/vjepa2_tiny/model.gguf" --quick

echo "$fails failed"
[ "$fails" -eq 0 ]
