package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class ThreadsTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  @Test
  void callbackOnNativeThreadsAttachesAndDetaches() throws InterruptedException {
    Set<String> names = ConcurrentHashMap.newKeySet();
    Set<Boolean> daemon = ConcurrentHashMap.newKeySet();
    try (Function onThread = Function.getGlobal("testing.call_on_thread");
        Function f =
            Function.convert(
                args -> {
                  names.add(Thread.currentThread().getName());
                  daemon.add(Thread.currentThread().isDaemon());
                  return (Long) args[0] + 1;
                })) {
      for (long i = 0; i < 1000; i++) assertEquals(i + 1, onThread.call(f, i));
      // every native thread was attached as "polyffi-native" and detached when it ended
      long attached = nativeThreads();
      for (int i = 0; i < 100 && attached > 0; i++) {
        Thread.sleep(20);
        attached = nativeThreads();
      }
      assertEquals(0, attached, "native threads still attached after 1000 calls");
    }
    assertEquals(Set.of("polyffi-native"), names);
    assertEquals(Set.of(true), daemon);
  }

  static long nativeThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals("polyffi-native"))
        .count();
  }

  @Test
  void finalizerOnANativeThreadRunsOnce() throws InterruptedException {
    AtomicInteger released = new AtomicInteger();
    AtomicInteger releasedOnJvmThread = new AtomicInteger();
    try (Function releaseOnThread = Function.getGlobal("testing.release_on_thread");
        Function join = Function.getGlobal("testing.join_release_threads")) {
      for (int i = 0; i < 20; i++) {
        Function f =
            Function.convert(
                new Callback() {
                  @Override
                  public Object invoke(Object... args) {
                    return null;
                  }

                  @Override
                  public void release() {
                    released.incrementAndGet();
                    if (!Thread.currentThread().getName().equals("polyffi-native")) {
                      releasedOnJvmThread.incrementAndGet();
                    }
                  }
                });
        releaseOnThread.call(f);
        f.close(); // ours goes first; the native thread drops the last one
      }
      join.call();
    }
    assertEquals(20, released.get());
  }

  @Test
  void eightThreadsCallConcurrently() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try (Function add3 = Function.getGlobal("testing.add3");
        Function apply = Function.getGlobal("testing.apply");
        Function concat = Function.getGlobal("testing.concat");
        Function twice = Function.convert(args -> 2 * (Long) args[0])) {
      List<Future<Long>> results = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        final long id = t;
        results.add(
            pool.submit(
                () -> {
                  long acc = 0;
                  for (long i = 0; i < 20000; i++) {
                    acc += add3.callLong(i, id, 1);
                    if (i % 10 == 0) {
                      acc += (Long) apply.call(twice, i);
                      assertEquals(
                          "t" + id + ":" + i, concat.call("t" + id, ":", Long.toString(i)));
                    }
                  }
                  return acc;
                }));
      }
      for (int t = 0; t < 8; t++) {
        long want = 0;
        for (long i = 0; i < 20000; i++) {
          want += i + t + 1;
          if (i % 10 == 0) want += 2 * i;
        }
        assertEquals(want, results.get(t).get(60, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void callAsyncOverlapsFourSleeps() throws Exception {
    // Each task records when it really starts and ends inside the executor's thread.
    long[][] spans = new long[4][2];
    ExecutorService base = Executors.newFixedThreadPool(4);
    AtomicInteger next = new AtomicInteger();
    java.util.concurrent.Executor recording =
        r ->
            base.execute(
                () -> {
                  int k = next.getAndIncrement();
                  spans[k][0] = System.nanoTime();
                  r.run();
                  spans[k][1] = System.nanoTime();
                });
    try (Function sleep = Function.getGlobal("testing.sleep_ms")) {
      List<CompletableFuture<Object>> futures = new ArrayList<>();
      for (int i = 0; i < 4; i++) futures.add(sleep.callAsync(recording, 300L));
      for (CompletableFuture<Object> f : futures) assertNull(f.get(30, TimeUnit.SECONDS));
    } finally {
      base.shutdown();
      assertTrue(base.awaitTermination(10, TimeUnit.SECONDS));
    }
    long lastStart = 0;
    long firstEnd = Long.MAX_VALUE;
    for (long[] s : spans) {
      lastStart = Math.max(lastStart, s[0]);
      firstEnd = Math.min(firstEnd, s[1]);
    }
    // every call was inside sleep_ms before any of them returned: the four overlapped
    assertTrue(lastStart < firstEnd, "the four sleep_ms calls did not overlap");
  }

  @Test
  void corePoolRunsOneCallPerWorkerAtOnce() throws Exception {
    // One callback per worker meets at a barrier: only possible if the pool runs them together.
    int workers = Function.configureAsync(0, 0).numWorkers();
    java.util.concurrent.CyclicBarrier barrier = new java.util.concurrent.CyclicBarrier(workers);
    try (Function apply = Function.getGlobal("testing.apply");
        Function meet = Function.convert(args -> (long) barrier.await(20, TimeUnit.SECONDS))) {
      List<CompletableFuture<Object>> futures = new ArrayList<>();
      for (int i = 0; i < workers; i++) futures.add(apply.callAsync(meet));
      Set<Object> arrival = new java.util.HashSet<>();
      for (CompletableFuture<Object> f : futures) arrival.add(f.get(30, TimeUnit.SECONDS));
      Set<Object> expected = new java.util.HashSet<>();
      for (long i = 0; i < workers; i++) expected.add(i);
      assertEquals(expected, arrival);
    }
  }

  @Test
  void callAsyncFailureCompletesExceptionally() {
    try (Function raise = Function.getGlobal("testing.raise_error")) {
      CompletableFuture<Object> f = raise.callAsync("KeyError", "async");
      java.util.concurrent.ExecutionException e =
          assertThrows(
              java.util.concurrent.ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
      assertEquals("KeyError", ((FFIException) e.getCause()).getKind());
    }
  }
}
