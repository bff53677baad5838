/* libhipblas.so (mini): stands in for hipblas (a thin layer over rocblas). */
#include <stdio.h>
#include "blob.h"
#include "rocblas.h"
BLOB(hipblas)

int hipblasCreate(void **handle)
{
  printf("  hipblas: hipblasCreate -> rocBLAS backend\n");
  if (handle)
    *handle = NULL;
  return rocblas_initialize();
}
