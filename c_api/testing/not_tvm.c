/*
 * A library built for nothing polyffi knows: plain C functions and none of the symbols a
 * TVM-built library carries (__tvm_module_ctx, __tvm_main__, __TVM* slots). One function is
 * named like a graph kernel; calling it with the packed signature would be undefined, so the
 * loader must not hand it out as a packed function.
 */
__attribute__((visibility("default"))) int not_tvm_add(int a, int b) { return a + b; }
__attribute__((visibility("default"))) int fused_add(int a) { return a + 1; }
