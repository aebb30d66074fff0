#!/bin/sh
# demo.sh - what tessel is for, in one minute: probe this machine, then run
# the four linear layers of BERT-base at thirteen sequence lengths, each a
# GEMM shape tessel has never seen before the call, with no tuning step and
# no padding, and print one table with GFLOP/s and the fraction of peak.
#
# Usage: sh tools/demo.sh [path/to/tessel]   (make demo passes $(BUILD)/tessel)
set -eu

TESSEL=${1:-build/tessel}
if [ ! -x "$TESSEL" ]; then
    echo "demo.sh: no tessel binary at '$TESSEL' (run make first)" >&2
    exit 2
fi

"$TESSEL" probe
echo

# BERT-base: hidden 768, 12 heads, FFN 3072. Each layer is (name N K);
# the sequence length is M, known only when a request arrives.
LAYERS="qkv:2304:768 attn_out:768:768 ffn_up:3072:768 ffn_down:768:3072"
SEQ_LENS="1 2 5 8 17 32 64 100 128 200 256 384 512"

# The CSV rows are kept for the summary; the table prints as it goes.
ROWS=$(mktemp "${TMPDIR:-/tmp}/tessel-demo.XXXXXX")
trap 'rm -f "$ROWS"' EXIT INT TERM

FORMAT='%7s  %-9s %16s %8s %10s %9s %7s\n'
echo "BERT-base linear layers, all threads; median of repeated calls"
printf "$FORMAT" "seq len" "layer" "M x N x K" "threads" "time (us)" "GFLOP/s" "% peak"
for M in $SEQ_LENS; do
    for layer in $LAYERS; do
        name=${layer%%:*}
        rest=${layer#*:}
        N=${rest%%:*}
        K=${rest#*:}
        # tessel picks the repeat count to spend ~0.2 s per shape, which
        # keeps the 52 shapes well under a minute.
        line=$("$TESSEL" gemm "$M" "$N" "$K" --csv)
        echo "$name,$line" >> "$ROWS"
        echo "$name,$line" | awk -F, -v fmt="$FORMAT" '{
            printf fmt, $2, $1, $2 "x" $3 "x" $4, $6, sprintf("%.1f", $7 * 1e6),
                   sprintf("%.1f", $8), sprintf("%.1f", $9) }'
    done
done

awk -F, '$8 > 0 { s += log($8); n++ }
         END { if (n) printf "\n%d shapes, geomean %.1f GFLOP/s\n", n, exp(s / n) }' "$ROWS"
