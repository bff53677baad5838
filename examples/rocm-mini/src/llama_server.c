/* llama-server (mini): the top-level consumer, like llama-cpp-rocm. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include "blob.h"
BLOB(llama)

/* Like the real llama.cpp (ggml-cuda built for HIP), llama-server links
 * hipblas, rocblas and the HIP runtime directly, so every RUNPATH entry of
 * this executable serves one of its own DT_NEEDED libraries. */
extern int hipblasCreate(void **handle);
extern const char *rocblas_get_version_string(void);
extern int hipRuntimeGetVersion(int *version);

int main(void)
{
  Dl_info info;
  void *handle;
  const char *libc_path = "?";

  if (dladdr((void *)printf, &info) && info.dli_fname)
    libc_path = info.dli_fname;
  printf("llama-server (mini, ROCm backend)\n");
  printf("  glibc %s from %s\n", gnu_get_libc_version(), libc_path);
  int hip_version = 0;
  hipRuntimeGetVersion(&hip_version);
  printf("  HIP runtime %d, rocBLAS %s\n", hip_version, rocblas_get_version_string());
  int rc = hipblasCreate(&handle);
  printf(rc == 0 ? "llama-server: backend ready\n" : "llama-server: backend FAILED\n");
  return rc == 0 ? 0 : 1;
}
