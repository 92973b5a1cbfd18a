package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** callAsync on the core's pool: the queue limit, cancellation, argument lifetimes. */
class AsyncTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  /** Every pool worker held inside a Java callback until release(). */
  static final class Held implements AutoCloseable {
    final CountDownLatch entered;
    final CountDownLatch release = new CountDownLatch(1);
    final List<CompletableFuture<Object>> calls = new ArrayList<>();
    final Function apply = Function.getGlobal("testing.apply");
    final Function block;

    Held() throws InterruptedException {
      int workers = Function.configureAsync(0, 0).numWorkers();
      entered = new CountDownLatch(workers);
      block =
          Function.convert(
              args -> {
                entered.countDown();
                return release.await(30, TimeUnit.SECONDS) ? 1L : 0L;
              });
      for (int i = 0; i < workers; i++) calls.add(apply.callAsync(block));
      assertTrue(entered.await(30, TimeUnit.SECONDS), "the workers did not start");
    }

    @Override
    public void close() throws Exception {
      release.countDown();
      for (CompletableFuture<Object> c : calls) assertEquals(1L, c.get(30, TimeUnit.SECONDS));
      block.close();
      apply.close();
    }
  }

  @Test
  void configureAsyncReportsThePoolAndRefusesNegatives() {
    Function.AsyncPool pool = Function.configureAsync(0, 0);
    assertTrue(pool.numWorkers() >= 1);
    assertEquals(1024, pool.queueLimit());
    assertEquals(0, pool.queued());
    FFIException e = assertThrows(FFIException.class, () -> Function.configureAsync(0, -1));
    assertEquals("ValueError", e.getKind());
  }

  @Test
  void aFullQueueFailsTheFutureWithQueueFullError() throws Exception {
    try (Held held = new Held();
        Function add = Function.getGlobal("testing.add")) {
      Function.configureAsync(0, 1);
      try {
        CompletableFuture<Object> queued = add.callAsync(1L, 2L);
        CompletableFuture<Object> refused = add.callAsync(3L, 4L);
        ExecutionException e = assertThrows(ExecutionException.class, refused::get);
        FFIException cause = (FFIException) e.getCause();
        assertEquals("QueueFullError", cause.getKind());
        assertTrue(cause.getMessage().contains("limit of 1"), cause.getMessage());
        held.close();
        assertEquals(3L, queued.get(30, TimeUnit.SECONDS));
      } finally {
        Function.configureAsync(0, 1024);
      }
    }
  }

  @Test
  void cancelTrueBeforeStartMeansTheCallNeverRuns() throws Exception {
    AtomicBoolean ran = new AtomicBoolean();
    try (Function apply = Function.getGlobal("testing.apply");
        Function mark =
            Function.convert(
                args -> {
                  ran.set(true);
                  return 1L;
                })) {
      CompletableFuture<Object> late;
      try (Held held = new Held()) {
        late = apply.callAsync(mark);
        assertEquals(1, Function.configureAsync(0, 0).queued());
        assertTrue(late.cancel(true));
        assertEquals(0, Function.configureAsync(0, 0).queued());
      }
      assertThrows(CancellationException.class, late::join);
      assertFalse(ran.get());
    }
  }

  @Test
  void stringAndBytesArgumentsAreCopiedAtSubmit() throws Exception {
    try (Function concat = Function.getGlobal("testing.concat");
        Function reverse = Function.getGlobal("testing.bytes_reverse")) {
      CompletableFuture<Object> s = concat.callAsync("ab", "c\0d", "日本");
      assertEquals("abc\0d日本", s.get(30, TimeUnit.SECONDS));
      byte[] in = {1, 2, 3};
      CompletableFuture<Object> b = reverse.callAsync((Object) in);
      in[0] = 9; // converted at submit: the call sees 1, 2, 3
      assertArrayEquals(new byte[] {3, 2, 1}, (byte[]) b.get(30, TimeUnit.SECONDS));
    }
  }
}
