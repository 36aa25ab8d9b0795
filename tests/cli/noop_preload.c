/*
 * A preload that does nothing: lets the `record` tests run CMD under
 * LD_PRELOAD before (or without) libvramtrace.so being built.
 */
int vrt_noop_preload_marker(void);

int vrt_noop_preload_marker(void)
{
	return 0;
}
