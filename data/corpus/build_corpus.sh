#!/usr/bin/env bash
# Builds an English text corpus from Debian packages, offline apart from the
# package archive, and prepares token shards from it:
#
#   1. apt-get download the packages the sources need (cached in WORK/debs)
#   2. dpkg -x them into WORK/root (no root rights needed) and record versions
#   3. extract_corpus.py: clean text, keep prose, dedupe paragraphs -> WORK/docs
#   4. flashtrain-prepare: train a SentencePiece BPE tokenizer on the training
#      documents, hold out whole documents for validation, write shards -> OUT
#
#   data/corpus/build_corpus.sh --small     # quickstart corpus, a few MB
#   data/corpus/build_corpus.sh             # full corpus
#
# Options: --out DIR (default .data/corpus or .data/corpus-small), --work DIR
# (default .data/corpus-work: the .deb cache and the cleaned documents), --vocab-size N (16384; --small: 4096),
# --val-fraction X (0.02; --small: 0.05), --jobs N (all cores),
# --prepare PATH (default build/data/flashtrain-prepare).
# Nothing is written into the repository's tracked files; the texts keep the
# licenses of their packages (copied to OUT/licenses/).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SMALL=0
OUT=""
WORK="$ROOT/.data/corpus-work"
VOCAB=""
VAL_FRACTION=""
JOBS="$(nproc)"
PREPARE="$ROOT/build/data/flashtrain-prepare"

die() { echo "build_corpus: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --small) SMALL=1 ;;
    --out) OUT="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --vocab-size) VOCAB="$2"; shift ;;
    --val-fraction) VAL_FRACTION="$2"; shift ;;
    --jobs) JOBS="$2"; shift ;;
    --prepare) PREPARE="$2"; shift ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
if ((SMALL)); then
  OUT="${OUT:-$ROOT/.data/corpus-small}"; VOCAB="${VOCAB:-4096}"; VAL_FRACTION="${VAL_FRACTION:-0.05}"
  MODE_FLAG=(--small)
else
  OUT="${OUT:-$ROOT/.data/corpus}"; VOCAB="${VOCAB:-16384}"; VAL_FRACTION="${VAL_FRACTION:-0.02}"
  MODE_FLAG=()
fi
[[ -x "$PREPARE" ]] || die "no flashtrain-prepare at $PREPARE; build the project first or pass --prepare"
command -v python3 >/dev/null || die "python3 is needed"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "apt-get and dpkg-deb are needed (Debian)"

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$(now) - $1:.1f}')"; }
step() { printf '\n== %s\n' "$*" >&2; }

mapfile -t PACKAGES < <(python3 "$HERE/extract_corpus.py" --list-packages "${MODE_FLAG[@]}")

# 1. Download what is not cached yet. A package the archive lacks is skipped
# (its source then reports "nothing found"), so other Debian releases work.
step "downloading ${#PACKAGES[@]} packages into $WORK/debs"
t0=$(now)
mkdir -p "$WORK/debs"
cached() { compgen -G "$WORK/debs/${1}_*.deb" >/dev/null; }
missing=()
for p in "${PACKAGES[@]}"; do cached "$p" || missing+=("$p"); done
if ((${#missing[@]})); then
  if ! (cd "$WORK/debs" && apt-get download "${missing[@]}" 2>"$WORK/apt.log"); then
    for p in "${missing[@]}"; do  # one at a time, to find the missing ones
      cached "$p" || (cd "$WORK/debs" && apt-get download "$p" 2>>"$WORK/apt.log") ||
        echo "build_corpus: warning: cannot download $p (see $WORK/apt.log; apt-get update?)" >&2
    done
  fi
fi
download_s=$(elapsed "$t0")

# 2. Unpack afresh and record exactly which versions went in.
step "unpacking into $WORK/root"
t0=$(now)
rm -rf "$WORK/root" "$OUT.new"
mkdir -p "$WORK/root" "$OUT.new/licenses"
printf 'package\tversion\tdeb\n' > "$OUT.new/packages.tsv"
for p in "${PACKAGES[@]}"; do
  for deb in "$WORK"/debs/"${p}"_*.deb; do
    [[ -e "$deb" ]] || continue
    dpkg-deb -x "$deb" "$WORK/root"
    printf '%s\t%s\t%s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
      "$(basename "$deb")" >> "$OUT.new/packages.tsv"
    if [[ -f "$WORK/root/usr/share/doc/$p/copyright" ]]; then
      cp "$WORK/root/usr/share/doc/$p/copyright" "$OUT.new/licenses/$p.copyright"
    fi
  done
done
unpack_s=$(elapsed "$t0")

# 3. Clean text documents.
step "extracting text"
t0=$(now)
python3 "$HERE/extract_corpus.py" --root "$WORK/root" --out "$WORK/docs" --jobs "$JOBS" \
  --stats "$OUT.new/extract.json" "${MODE_FLAG[@]}"
extract_s=$(elapsed "$t0")
rm -rf "$WORK/root"  # about 1 GB unpacked in full mode; the .deb cache stays

# 4. Tokenizer and shards, written next to the records and then swapped in.
step "training the tokenizer and writing shards"
t0=$(now)
"$PREPARE" --output "$OUT.new" --train-tokenizer --vocab-size "$VOCAB" --threads "$JOBS" \
  --tokenizer-threads "$JOBS" --val-fraction "$VAL_FRACTION" "$WORK/docs"
prepare_s=$(elapsed "$t0")

python3 - "$OUT.new" "$SMALL" "$download_s" "$unpack_s" "$extract_s" "$prepare_s" <<'PY'
import csv, json, os, sys
out, small, *seconds = sys.argv[1:]
with open(os.path.join(out, "packages.tsv")) as f:
    packages = list(csv.DictReader(f, delimiter="\t"))
with open(os.path.join(out, "extract.json")) as f:
    extract = json.load(f)
with open(os.path.join(out, "prepare.json")) as f:
    prepare = json.load(f)
record = {
    "mode": "small" if small == "1" else "full",
    "packages": packages,
    "text_bytes": extract["bytes"],
    "documents": extract["documents"],
    "train": {k: prepare["train"][k] for k in ("documents", "bytes", "tokens")},
    "val": {k: prepare["val"][k] for k in ("documents", "bytes", "tokens")},
    "vocab_size": prepare["tokenizer"]["vocab_size"],
    "seconds": dict(zip(("download", "unpack", "extract", "prepare"), map(float, seconds))),
}
with open(os.path.join(out, "corpus.json.tmp"), "w") as f:
    json.dump(record, f, indent=2)
os.replace(os.path.join(out, "corpus.json.tmp"), os.path.join(out, "corpus.json"))
print(json.dumps({k: record[k] for k in ("mode", "text_bytes", "train", "val", "vocab_size", "seconds")}, indent=2))
PY
# Swap the finished corpus in (prepare.json names the tokenizer relative to OUT).
rm -rf "$OUT.old"
[[ -e "$OUT" ]] && mv "$OUT" "$OUT.old"
mv "$OUT.new" "$OUT"
rm -rf "$OUT.old"
step "corpus ready in $OUT"
