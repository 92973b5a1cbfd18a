package org.polyffi;

import java.nio.charset.StandardCharsets;

final class Utf8 {
  private Utf8() {}

  static byte[] encode(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
