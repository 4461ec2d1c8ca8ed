#!/usr/bin/env bash
# Measurement (issue 30, docs/size.md "The 3 MiB goal"): how large the
# probe would be linked against musl instead of the static glibc, for the
# next session's decision. NOT how the shipped binary is built.
#   bench/size-musl.sh
# Rust's musl target (rust-std for x86_64-unknown-linux-musl) cannot be
# installed on these machines, so this links the glibc target's objects
# against Debian's musl 1.2.3 (apt-get install musl-dev) through gcc with a
# specs file for static-pie (rcrt1.o), plus two shims for the two glibc
# symbols musl lacks (gnu_get_libc_version, which std asks before using
# posix_spawn; _dl_find_object, which Debian's libgcc_eh asks for unwind
# tables). musl 1.2.3 cannot apply DT_RELR relocations, so they are left
# unpacked (the linker wrapper drops build.rs's -z pack-relative-relocs). Prints the stripped size and checks
# that the binary starts (`--version`, `list-checks`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
musl=/usr/lib/x86_64-linux-musl
[ -e "$musl/libc.a" ] || { echo "size-musl: needs musl-dev ($musl/libc.a)" >&2; exit 2; }
gccdir=$(dirname "$(gcc -print-libgcc-file-name)")
tmp=$(mktemp -d /tmp/selfprobe-size-musl.XXXXXX)
target=${SIZE_MUSL_TARGET:-/tmp/selfprobe-size-musl-target}
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/musl.specs" <<SPECS
*link_libgcc:
-L$musl -L$gccdir

*libgcc:
libgcc.a%s %:if-exists(libgcc_eh.a%s)

*startfile:
%{static-pie:$musl/rcrt1.o;:$musl/Scrt1.o} $musl/crti.o crtbeginS.o%s

*endfile:
crtendS.o%s $musl/crtn.o

*link:
-nostdlib %{static-pie:-static -pie --no-dynamic-linker -z text}

SPECS
cat > "$tmp/shims.c" <<'C'
struct dl_find_object;
const char *gnu_get_libc_version(void) { return "2.36"; }
int _dl_find_object(void *pc, struct dl_find_object *r) { (void)pc; (void)r; return -1; }
C
gcc -O2 -fPIE -nostdinc -isystem /usr/include/x86_64-linux-musl -c "$tmp/shims.c" -o "$tmp/shims.o"
# build.rs asks for packed relocations; the wrapper drops that one argument.
cat > "$tmp/cc" <<CC
#!/bin/sh
for a do
    shift
    [ "\$a" = -Wl,-z,pack-relative-relocs ] || set -- "\$@" "\$a"
done
exec gcc "\$@" -specs $tmp/musl.specs
CC
chmod +x "$tmp/cc"
CARGO_TARGET_DIR=$target \
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static -C linker=$tmp/cc -C link-arg=$tmp/shims.o" \
    cargo build --release --quiet -p selfprobe
bin=$target/x86_64-unknown-linux-gnu/release/selfprobe
"$bin" --version >/dev/null
"$bin" list-checks >/dev/null
printf 'FIGURES musl-linked probe: %s bytes (limit 3,145,728); glibc-linked main: ' "$(stat -c %s "$bin")"
cargo build --release --quiet -p selfprobe
stat -c '%s bytes' target/x86_64-unknown-linux-gnu/release/selfprobe
size -A "$bin" | awk '$1==".rela.dyn" {print "  .rela.dyn of the musl link: " $2 " bytes"}'
