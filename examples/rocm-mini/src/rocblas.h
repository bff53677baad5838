/* rocblas.h (mini) */
#ifndef ROCBLAS_H
#define ROCBLAS_H
#ifdef __cplusplus
extern "C" {
#endif
/* Initialise the HIP runtime and locate the Tensile kernel library.
 * Like the real librocblas, the kernels are looked up at run time relative to
 * the directory holding librocblas.so: <libdir>/rocblas/library, unless
 * ROCBLAS_TENSILE_LIBPATH is set. Returns 0 on success. */
int rocblas_initialize(void);
const char *rocblas_get_version_string(void);
#ifdef __cplusplus
}
#endif
#endif
