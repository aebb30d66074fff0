/* test_model.c - placeholder until the suite is written. */
#include "test.h"

void suite_model(void)
{
}
