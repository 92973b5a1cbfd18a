package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class RegistryTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  /** A typed view of testing.*: each method calls testing.<name>. */
  interface Testing extends AutoCloseable {
    long add(long a, long b);

    long add3(long a, long b, long c);

    String concat(String a, String b);

    Object echo(Object x);

    double nd_sum(NDArray a);

    int sum(long a, long b, long c);

    void nop();

    List<Object> make_array(Object a, Object b);

    @Override
    void close();
  }

  interface Missing {
    long no_such_function(long a);
  }

  interface Mine {
    long twice(long x);
  }

  @Test
  void bindMakesATypedProxy() {
    try (Testing t = Registry.bind("testing", Testing.class)) {
      assertEquals(5, t.add(2, 3));
      assertEquals(6, t.add3(1, 2, 3));
      assertEquals("ab", t.concat("a", "b"));
      assertEquals(7L, t.echo(7L));
      assertEquals(6, t.sum(1, 2, 3));
      t.nop();
      assertEquals(List.of(1L, "x"), List.copyOf(t.make_array(1L, "x")));
      try (NDArray a = NDArray.of(new float[] {1, 2, 3.5f}, 3)) {
        assertEquals(6.5, t.nd_sum(a));
      }
      FFIException e = assertThrows(FFIException.class, () -> t.concat("a", null));
      assertEquals("TypeError", e.getKind());
    }
  }

  @Test
  void bindLooksEachFunctionUpOnce() {
    Function.register("java.once.twice", args -> 2 * (Long) args[0], true).close();
    Mine m = Registry.bind("java.once", Mine.class);
    Function.removeGlobal("java.once.twice");
    // the proxy holds the function it looked up at bind time
    assertEquals(42, m.twice(21));
    assertThrows(FFIException.class, () -> Registry.bind("java.once", Mine.class));
  }

  @Test
  void bindFailsEarlyForAMissingFunction() {
    FFIException e =
        assertThrows(FFIException.class, () -> Registry.bind("testing", Missing.class));
    assertEquals("ValueError", e.getKind());
    assertTrue(e.getMessage().contains("testing.no_such_function"), e.getMessage());
  }

  @Test
  void namespaceListsAndCalls() {
    try (Registry.Namespace ns = Registry.namespace("testing")) {
      List<String> names = ns.names();
      assertTrue(names.contains("add") && names.contains("echo"), names.toString());
      assertTrue(names.stream().noneMatch(n -> n.contains(".")));
      assertEquals(3L, ns.call("add", 1L, 2L));
      assertSame(ns.get("add"), ns.get("add"));
      assertEquals("ValueError", assertThrows(FFIException.class, () -> ns.get("nope")).getKind());
    }
  }
}
