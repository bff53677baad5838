/* libLLVM.so (mini): stands in for rocm-llvm's libLLVM / libclang-cpp. */
#include <stdlib.h>
#include "blob.h"
BLOB(llvm)

const char *LLVMGetVersionString(void)
{
  /* getenv keeps libc.so.6 in DT_NEEDED, so the glibc RUNPATH entry is live. */
  const char *v = getenv("ROCM_MINI_LLVM_VERSION");
  return v && *v ? v : "17.0.0git (AMD ROCm 5.7.1, mini)";
}
