/* librocm_smi64.so (mini): stands in for rocm-smi.  Nothing ever calls it:
 * hipblas only carries its lib/ directory in RUNPATH (a dead entry). */
#include <stdlib.h>
#include "blob.h"
BLOB(rsmi)

int rsmi_init(unsigned long long flags)
{
  /* getenv keeps libc.so.6 in DT_NEEDED: its own glibc RUNPATH is live. */
  return getenv("RSMI_DEBUG") != NULL && flags == 0;
}
