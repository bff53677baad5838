/* libamdhip64.so (mini): stands in for clr (HIP runtime + comgr). */
#include <stdio.h>
#include "blob.h"
BLOB(hip)

extern const char *LLVMGetVersionString(void);
extern int hsa_init(void);

int hipInit(unsigned int flags)
{
  int rc = hsa_init();
  printf("  clr: hipInit(%u) = %d (device compiler: LLVM %s)\n", flags, rc, LLVMGetVersionString());
  return rc;
}

int hipRuntimeGetVersion(int *version)
{
  *version = 50731921; /* ROCm 5.7.1 */
  return 0;
}
