/* test_kernels.c - placeholder until the suite is written. */
#include "test.h"

void suite_kernels(void)
{
}
