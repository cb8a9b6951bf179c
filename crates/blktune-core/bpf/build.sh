#!/usr/bin/env bash
# Rebuild latency.bpf.o from latency.bpf.c with Debian's clang (packages:
# clang, llvm, libbpf-dev, linux-libc-dev). The object is committed and
# embedded in the binary, so building blktune needs only Rust; CI runs
# .ci/check-bpf-object to make sure the committed object is this source's.
#
# The output is byte-for-byte reproducible with the same clang: the build runs
# in this directory with a relative source name and -fdebug-prefix-map, and the
# DWARF (which would carry the build directory) is stripped; the BTF that
# CO-RE needs stays.
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-latency.bpf.o}
multiarch=$(gcc -dumpmachine 2>/dev/null || echo "$(uname -m)-linux-gnu")
clang -g -O2 -target bpf -Wall -Werror \
  -fdebug-prefix-map="$PWD"=. \
  -I"/usr/include/$multiarch" \
  -c latency.bpf.c -o "$out"
llvm-strip -g "$out"
