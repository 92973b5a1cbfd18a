package org.polyffi;

/** A raw pointer (kTVMOpaqueHandle) passed through unchanged. */
public record OpaqueHandle(long address) {}
