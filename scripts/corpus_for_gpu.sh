#!/usr/bin/env bash
# The full offline corpus (.data/corpus, 77 MB of token shards) is larger than
# what fits a 64 MiB copy to a GPU machine beside the working tree; xz packs it to
# about 31 MB. Here: `pack` writes .data/corpus-xz/ (git-ignored; carry it).
# On the GPU machine: `unpack` restores .data/corpus/ from it (python3's lzma,
# so no xz binary is needed there); the scripts that train call it.
#
#   bash scripts/corpus_for_gpu.sh pack     # here, after scripts/setup.sh
#   bash scripts/corpus_for_gpu.sh unpack   # there; no-op if .data/corpus is complete
#
# TRAIN_TOKENS=N pack keeps the first N tokens of the training shard (its
# header's count rewritten), for a copy that leaves room beside the binaries:
# 16M tokens pack to about 13 MB, enough for the speed runs of experiments/lm.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SRC=.data/corpus
PACKED=.data/corpus-xz
FILES=(tokenizer.model train_000000.bin val_000000.bin corpus.json)
case "${1:-}" in
  pack)
    for f in "${FILES[@]}"; do [[ -f $SRC/$f ]] || { echo "corpus_for_gpu: $SRC/$f missing (run scripts/setup.sh)" >&2; exit 1; }; done
    rm -rf "$PACKED.tmp" && mkdir -p "$PACKED.tmp"
    mkdir -p "$PACKED.tmp/src"
    for f in "${FILES[@]}"; do cp "$SRC/$f" "$PACKED.tmp/src/$f"; done
    if [[ -n ${TRAIN_TOKENS:-} ]]; then
      # llm.c's shard header: 256 int32, [2] the token count; then the tokens.
      python3 - "$PACKED.tmp/src/train_000000.bin" "$TRAIN_TOKENS" <<'PY'
import struct, sys
path, keep = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    header = bytearray(f.read(1024))
    magic, version, count = struct.unpack_from("<3i", header)
    width = {20240520: 2, 20240801: 4}[magic]
    if keep < count:
        struct.pack_into("<i", header, 8, keep)
        f.seek(0); f.write(header); f.truncate(1024 + keep * width)
        print(f"corpus_for_gpu: training shard cut to {keep} of its {count} tokens")
PY
    fi
    for f in "${FILES[@]}"; do xz -T0 -6 -c "$PACKED.tmp/src/$f" > "$PACKED.tmp/$f.xz"; done
    (cd "$PACKED.tmp/src" && sha256sum "${FILES[@]}") > "$PACKED.tmp/SHA256SUMS"
    rm -rf "$PACKED.tmp/src"
    rm -rf "$PACKED" && mv "$PACKED.tmp" "$PACKED"
    du -sh "$PACKED"
    ;;
  unpack)
    [[ -f $PACKED/SHA256SUMS ]] || { echo "corpus_for_gpu: no $PACKED (pack it here and carry it)" >&2; exit 1; }
    if (cd "$SRC" 2>/dev/null && sha256sum --quiet -c "../corpus-xz/SHA256SUMS" > /dev/null 2>&1); then exit 0; fi
    mkdir -p "$SRC"
    for f in "${FILES[@]}"; do
      # Written under a temporary name and renamed: a reader never sees half a shard.
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"), 1 << 20)' \
        "$PACKED/$f.xz" "$SRC/$f.tmp"
      mv -f "$SRC/$f.tmp" "$SRC/$f"
    done
    (cd "$SRC" && sha256sum --quiet -c "../corpus-xz/SHA256SUMS") || { echo "corpus_for_gpu: checksum mismatch after unpacking" >&2; exit 1; }
    echo "corpus_for_gpu: $SRC unpacked ($(du -sh "$SRC" | cut -f1))"
    ;;
  *) echo "usage: $0 pack|unpack" >&2; exit 2 ;;
esac
