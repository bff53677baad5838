/* librocblas.so (mini): stands in for rocblas.
 *
 * The real librocblas finds its Tensile kernels (*.hsaco, *.co, *.dat) at run
 * time in "<dir of librocblas.so>/rocblas/library".  That relative string is
 * all the library holds: no store path of any rocblas-tensile-* derivation
 * appears in this ELF file.  The store references to the per-GPU Tensile
 * derivations come only from the symlink farm in $out/lib/rocblas/library.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "blob.h"
#include "rocblas.h"
BLOB(rocblas)

extern int hipInit(unsigned int flags);

static const char tensile_subdir[] = "rocblas/library";

static int ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

const char *rocblas_get_version_string(void)
{
  return "3.1.0.mini-5.7.1";
}

int rocblas_initialize(void)
{
  char dir[PATH_MAX];
  const char *env = getenv("ROCBLAS_TENSILE_LIBPATH");

  if (hipInit(0) != 0)
    return -1;

  if (env && *env) {
    snprintf(dir, sizeof dir, "%s", env);
  } else {
    Dl_info info;
    char self[PATH_MAX];
    if (!dladdr((void *)rocblas_initialize, &info) || !info.dli_fname)
      return -1;
    snprintf(self, sizeof self, "%s", info.dli_fname);
    snprintf(dir, sizeof dir, "%s/%s", dirname(self), tensile_subdir);
  }

  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "  rocblas: cannot open Tensile library %s\n", dir);
    return -1;
  }
  long count = 0;
  long long bytes = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char p[PATH_MAX + 256 + 2];
    struct stat st;
    if (!(ends_with(e->d_name, ".hsaco") || ends_with(e->d_name, ".co") ||
          ends_with(e->d_name, ".dat")))
      continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &st) == 0) { /* follows the symlink farm */
      count++;
      bytes += st.st_size;
    }
  }
  closedir(d);
  printf("  rocblas: %ld Tensile code objects (%.1f MiB) in %s\n", count,
         bytes / 1048576.0, dir);

  /* Like Tensile's lazy loading, load only the kernel library of the GPU
   * in use.  The mini has no GPU: ROCBLAS_GPU_TARGET names it (gfx90a).
   * The file is opened through the symlink farm, so it is read from the
   * rocblas-tensile-<target> path. */
  const char *target = getenv("ROCBLAS_GPU_TARGET");
  if (target && *target) {
    char p[PATH_MAX + 64];
    char buf[4096];
    snprintf(p, sizeof p, "%s/TensileLibrary_%s.dat", dir, target);
    FILE *f = fopen(p, "rb");
    if (!f) {
      fprintf(stderr, "  rocblas: no Tensile library for %s: %s\n", target, p);
      return -1;
    }
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    printf("  rocblas: loaded %s kernels (%zu bytes read from %s)\n", target,
           n, p);
  }
  return 0;
}
