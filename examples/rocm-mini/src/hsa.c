/* libhsa-runtime64.so (mini): stands in for rocm-runtime (ROCr). */
#include <stdio.h>
#include "blob.h"
BLOB(hsa)

extern const char *LLVMGetVersionString(void);

int hsa_init(void)
{
  printf("  rocm-runtime: hsa_init ok (code-object loader: LLVM %s)\n", LLVMGetVersionString());
  return 0;
}
