package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Bad input gives a clear Java exception, never a JVM crash. */
class BadInputTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  @Test
  void wrongArgumentTypeNamesTheArgument() {
    try (Function add = Function.getGlobal("testing.add")) {
      FFIException e = assertThrows(FFIException.class, () -> add.call(1L, 2.5));
      assertEquals("TypeError", e.getKind());
      assertTrue(
          e.getMessage().contains("argument 1")
              && e.getMessage().contains("expected int but got float"),
          e.getMessage());
      FFIException arity = assertThrows(FFIException.class, () -> add.call(1L));
      assertEquals("TypeError", arity.getKind());
    }
  }

  @Test
  void unsupportedJavaTypeNamesTheArgument() {
    try (Function echo = Function.getGlobal("testing.echo")) {
      FFIException e = assertThrows(FFIException.class, () -> echo.call(new java.util.Date()));
      assertEquals("TypeError", e.getKind());
      assertTrue(
          e.getMessage().contains("argument 0") && e.getMessage().contains("java.util.Date"),
          e.getMessage());
    }
  }

  @Test
  void missingFile() {
    FFIException e =
        assertThrows(FFIException.class, () -> Module.load("/nonexistent/libnothing.so"));
    assertEquals("ValueError", e.getKind());
    assertTrue(e.getMessage().contains("/nonexistent/libnothing.so"), e.getMessage());
  }

  @Test
  void nonLibraryFile() throws Exception {
    FFIException e =
        assertThrows(FFIException.class, () -> Module.load(TestEnv.lib("polyffi_corrupt")));
    assertTrue(e.getMessage().contains("polyffi_corrupt"), e.getMessage());
    Path text = Files.createTempFile("polyffi-not-a-lib", ".so");
    Files.writeString(text, "not an ELF file");
    try {
      FFIException e2 = assertThrows(FFIException.class, () -> Module.load(text.toString()));
      assertFalse(e2.getKind().isEmpty());
    } finally {
      Files.delete(text);
    }
  }

  @Test
  void freedHandlesThrow() {
    Module m = Module.load(TestEnv.lib("polyffi_test_dso"));
    Function f = m.getFunction("scale_i64");
    m.close();
    assertEquals(6L, f.call(2L, 3L)); // a function keeps its module alive
    f.close();
    assertThrows(IllegalStateException.class, () -> f.call(2L, 3L));
    assertThrows(IllegalStateException.class, () -> m.getFunction("scale_i64"));
    assertThrows(IllegalStateException.class, m::typeKey);
    try (Function echo = Function.getGlobal("testing.echo")) {
      assertThrows(IllegalStateException.class, () -> echo.call(f));
    }
  }

  @Test
  void unknownDtype() {
    FFIException e = assertThrows(FFIException.class, () -> DataType.parse("floaty"));
    assertEquals("ValueError", e.getKind());
  }

  @Test
  void wrongResultTypeForTheFastPath() {
    try (Function concat = Function.getGlobal("testing.concat")) {
      FFIException e = assertThrows(FFIException.class, () -> concat.callLong());
      assertEquals("TypeError", e.getKind());
    }
  }
}
