#!/usr/bin/env bash
# firmware.image: what the scanner firmware library costs on a Cortex-M4, checked on the
# images the firmware build links (tests/firmware/CMakeLists.txt):
#   - no heap: no malloc, free, realloc, calloc (nor newlib's _r variants or sbrk) is linked
#     into the test image or into the footprint image;
#   - no static RAM: the library's objects have no .data and no .bss;
#   - flash: the footprint image (the library, nanopb's runtime, the generated payload code and
#     what they take from newlib-nano, after --gc-sections) stays under FLASH_BOUND bytes.
# Prints the figures docs/firmware.md and BENCHMARKS.md report.
#
#   check_image.sh FIRMWARE_BUILD_DIR
set -euo pipefail

dir=${1:?usage: check_image.sh FIRMWARE_BUILD_DIR}
FLASH_BOUND=$((24 * 1024))
failed=0
fail() {
  printf 'firmware.image: FAIL: %s\n' "$*"
  failed=1
}

heap_symbols() { # the heap functions a file defines or needs
  arm-none-eabi-nm "$1" 2>/dev/null |
    grep -E '^.* [TtWwU] (malloc|free|realloc|calloc|_malloc_r|_free_r|_realloc_r|_calloc_r|_sbrk|_sbrk_r|sbrk)$' |
    awk '{print $NF}' | sort -u | tr '\n' ' ' || true
}

# The check itself must see a heap where there is one: newlib-nano's libc defines malloc.
libc=$(arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=soft --specs=nano.specs \
  -print-file-name=libc_nano.a)
[[ -n $(heap_symbols "$libc") ]] || fail "the heap check finds no malloc in $libc: it is broken"

for image in fw_test.elf fw_footprint.elf; do
  [[ -f $dir/$image ]] || { fail "$dir/$image is missing"; continue; }
  found=$(heap_symbols "$dir/$image")
  if [[ -n $found ]]; then
    fail "$image links heap functions: $found"
  else
    printf 'no heap in %s: none of malloc, free, realloc, calloc, sbrk is linked\n' "$image"
  fi
done

# The archives of src/scanner/CMakeLists.txt: the library; nanopb's runtime (compiled from
# the fetched sources) and the generated payload code.
read -r lib_text lib_data lib_bss < <(arm-none-eabi-size -t "$dir/libwalklist_scanner.a" |
  awk '/TOTALS/ {print $1, $2, $3}')
read -r pb_text pb_data pb_bss < <(arm-none-eabi-size -t "$dir/libwalklist_scanner_nanopb.a" \
  "$dir/libwalklist_device_proto.a" | awk '/TOTALS/ {print $1, $2, $3}')
read -r fp_text fp_data fp_bss < <(arm-none-eabi-size "$dir/fw_footprint.elf" |
  awk 'NR == 2 {print $1, $2, $3}')
((lib_data + lib_bss == 0)) || fail "the library has static RAM: .data $lib_data, .bss $lib_bss"
((pb_data + pb_bss == 0)) || fail "nanopb and the payload code have static RAM: .data $pb_data, .bss $pb_bss"
printf 'library objects (src/scanner scanner_*.c, -Os, before --gc-sections): text %d, data %d, bss %d\n' \
  "$lib_text" "$lib_data" "$lib_bss"
printf 'nanopb runtime + generated device.pb.c (before --gc-sections): text %d, data %d, bss %d\n' \
  "$pb_text" "$pb_data" "$pb_bss"
printf 'footprint image (all of it linked, --gc-sections, vector table and newlib-nano included): flash %d bytes (bound %d)\n' \
  "$((fp_text + fp_data))" "$FLASH_BOUND"
((fp_text + fp_data <= FLASH_BOUND)) || fail "the footprint image is $((fp_text + fp_data)) bytes of flash"

# The deepest static frames of the decode path (-fstack-usage), for reading next to the
# painted-stack figure of e2e.test_firmware.
find "$dir" -name '*.su' -print0 | xargs -0 cat 2>/dev/null |
  sort -t$'\t' -k2 -n -r | head -5 | sed 's/^/largest frames: /' || true
exit "$failed"
