/*
 * DLDataType <-> its string form ("float32", "int8x4", "bool", "handle"), the spelling classic
 * TVM uses and the one TVMFuncCall returns dtypes in. One definition for the core, the graph
 * executor, the fixtures and the bindings, so a dtype reads back the same everywhere.
 * Header-only; exports nothing.
 */
#ifndef POLYFFI_DTYPE_STRING_H_
#define POLYFFI_DTYPE_STRING_H_

#include <polyffi/dlpack_compat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/*!
 * \brief Parse a dtype string: "int|uint|float|bfloat" with optional bits (default 32; bfloat
 *  16), "bool" (kDLBool, 8 bits, as numpy and torch export it) or "handle", each with an
 *  optional "xLANES". \param s borrowed. \param out set only on success.
 * \return 0, or -1 when s is not a dtype.
 */
static inline int PolyffiDataTypeFromString(const char* s, DLDataType* out) {
  static const struct {
    const char* name;
    uint8_t code;
    uint8_t default_bits;
  } kPrefixes[] = {{"bool", kDLBool, 8},      {"handle", kDLOpaqueHandle, 64},
                   {"bfloat", kDLBfloat, 16}, {"float", kDLFloat, 32},
                   {"uint", kDLUInt, 32},     {"int", kDLInt, 32}};
  const char* p = NULL;
  DLDataType t;
  size_t i;
  int fixed_bits;
  char* end;
  if (s == NULL) return -1;
  for (i = 0; i < sizeof(kPrefixes) / sizeof(kPrefixes[0]); ++i) {
    size_t len = strlen(kPrefixes[i].name);
    if (strncmp(s, kPrefixes[i].name, len) == 0) {
      p = s + len;
      t.code = kPrefixes[i].code;
      t.bits = kPrefixes[i].default_bits;
      break;
    }
  }
  if (p == NULL) return -1;
  t.lanes = 1;
  fixed_bits = t.code == kDLBool || t.code == kDLOpaqueHandle;
  if (!fixed_bits && *p >= '0' && *p <= '9') {
    long bits = strtol(p, &end, 10);
    if (bits <= 0 || bits > 255) return -1;
    t.bits = (uint8_t)bits;
    p = end;
  }
  if (*p == 'x') {
    long lanes;
    if (p[1] < '0' || p[1] > '9') return -1;
    lanes = strtol(p + 1, &end, 10);
    if (lanes <= 0 || lanes > 65535) return -1;
    t.lanes = (uint16_t)lanes;
    p = end;
  }
  if (*p != '\0') return -1;
  *out = t;
  return 0;
}

/*!
 * \brief Write the string form of t into buf (size bytes; 32 holds any output).
 *
 *  Whatever this prints reads back with PolyffiDataTypeFromString as t itself, with one
 *  deliberate alias: classic TVM's uint1 prints "bool" (code written for it compares against
 *  "bool"), which reads back as kDLBool, 8 bits. A dtype with no string form (an unknown type
 *  code, 0 bits, 0 lanes, a bool or handle of another width) is not printed as a dtype:
 *  the function returns -1 and buf holds a description "<dtype CODE:BITSxLANES>" for error
 *  messages (say "<dtype 45:2x8192>"), which no parser accepts.
 * \return 0 when buf holds a dtype string, -1 otherwise (and when buf is too small).
 */
static inline int PolyffiDataTypeToString(DLDataType t, char* buf, size_t size) {
  const char* base = NULL;
  int n;
  int fixed_bits = 0;
  if (buf == NULL || size == 0) return -1;
  buf[0] = '\0';
  if ((t.code == kDLBool && t.bits == 8) || (t.code == kDLUInt && t.bits == 1)) {
    base = "bool";
    fixed_bits = 1;
  } else if (t.code == kDLOpaqueHandle && t.bits == 64) {
    base = "handle";
    fixed_bits = 1;
  } else if (t.bits != 0) {
    base = t.code == kDLInt      ? "int"
           : t.code == kDLUInt   ? "uint"
           : t.code == kDLFloat  ? "float"
           : t.code == kDLBfloat ? "bfloat"
                                 : NULL;
  }
  if (base == NULL || t.lanes == 0) {
    snprintf(buf, size, "<dtype %d:%dx%d>", (int)t.code, (int)t.bits, (int)t.lanes);
    return -1;
  }
  n = fixed_bits ? snprintf(buf, size, "%s", base) : snprintf(buf, size, "%s%d", base, (int)t.bits);
  if (n >= 0 && (size_t)n < size && t.lanes != 1) {
    n += snprintf(buf + n, size - (size_t)n, "x%d", (int)t.lanes);
  }
  return n >= 0 && (size_t)n < size ? 0 : -1;
}

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* POLYFFI_DTYPE_STRING_H_ */
