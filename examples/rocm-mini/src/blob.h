/* blob.h - give a miniature library a realistic on-disk weight.
 *
 * BLOB(tag) emits a BLOB_MIB MiB constant array into .rodata.  It has a
 * non-zero initializer, so the whole array is stored in the ELF file (not in
 * .bss), but it is almost all zeros, so it compresses to nearly nothing in an
 * xz binary cache.  `used` keeps -O2 from dropping it.
 */
#ifndef ROCM_MINI_BLOB_H
#define ROCM_MINI_BLOB_H
#ifndef BLOB_MIB
#define BLOB_MIB 1
#endif
#define BLOB(tag) \
  __attribute__((used)) static const unsigned char tag##_blob[(BLOB_MIB) << 20] = { 'b', 'l', 'o', 'b' };
#endif
