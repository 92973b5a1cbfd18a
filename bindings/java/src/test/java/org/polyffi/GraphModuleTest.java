package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The digits model through GraphModule: the same predictions as the C demo and Python. */
class GraphModuleTest {
  static final Path MODEL = TestEnv.repoRoot().resolve("examples/digits/model");

  static int argmax(float[] row, int off, int n) {
    int best = 0;
    for (int j = 1; j < n; j++) if (row[off + j] > row[off + best]) best = j;
    return best;
  }

  @Test
  void digitsPredictionsMatchExpected() throws IOException {
    JsonNode expected = new ObjectMapper().readTree(MODEL.resolve("expected.json").toFile());
    int n = expected.get("num_samples").asInt();
    byte[] x = Files.readAllBytes(MODEL.resolve("test_x.bin"));
    assertEquals(n * 64 * 4, x.length);
    ByteBuffer input = ByteBuffer.allocateDirect(x.length).order(ByteOrder.nativeOrder());
    input.put(x).flip();
    try (Module lib = Module.load(TestEnv.lib("digits_model"));
        GraphModule g =
            GraphModule.create(Files.readString(MODEL.resolve("graph.json")), lib, Device.cpu());
        NDArray in = NDArray.fromBuffer(input, new long[] {n, 64}, DataType.FLOAT32)) {
      g.loadParams(Files.readAllBytes(MODEL.resolve("params.bin")));
      assertEquals(1, g.getNumOutputs());
      g.setInput("data", in);
      g.run();
      float[] probs;
      try (NDArray out = g.getOutput(0)) {
        assertArrayEquals(new long[] {n, 10}, out.shape());
        probs = out.toFloatArray();
      }
      int same = 0;
      for (int i = 0; i < n; i++) {
        if (argmax(probs, 10 * i, 10) == expected.get("predictions").get(i).asInt()) same++;
      }
      assertEquals(n, same, "predictions equal to examples/digits/model/expected.json");
      byte[] ep = Files.readAllBytes(MODEL.resolve("expected_probs.bin"));
      ByteBuffer eb = ByteBuffer.wrap(ep).order(ByteOrder.LITTLE_ENDIAN);
      double maxDiff = 0;
      for (int i = 0; i < n * 10; i++)
        maxDiff = Math.max(maxDiff, Math.abs(eb.getFloat(4 * i) - probs[i]));
      assertTrue(maxDiff < 1e-5, "max |p - p_numpy| = " + maxDiff);
    }
  }

  @Test
  void batchOneGraphWithOutputBuffer() throws IOException {
    JsonNode expected = new ObjectMapper().readTree(MODEL.resolve("expected.json").toFile());
    byte[] x = Files.readAllBytes(MODEL.resolve("test_x.bin"));
    ByteBuffer xb = ByteBuffer.wrap(x).order(ByteOrder.LITTLE_ENDIAN);
    try (Module lib = Module.load(TestEnv.lib("digits_model"));
        GraphModule g =
            GraphModule.create(
                Files.readString(MODEL.resolve("graph_b1.json")), lib, Device.cpu());
        NDArray in = NDArray.empty(new long[] {1, 64}, DataType.FLOAT32);
        NDArray out = NDArray.empty(new long[] {1, 10}, DataType.FLOAT32)) {
      g.loadParams(Files.readAllBytes(MODEL.resolve("params.bin")));
      int idx = g.getInputIndex("data");
      assertEquals(0, idx);
      float[] row = new float[64];
      float[] p = new float[10];
      for (int i = 0; i < 20; i++) {
        for (int j = 0; j < 64; j++) row[j] = xb.getFloat(4 * (64 * i + j));
        in.copyFrom(row);
        g.setInput(idx, in);
        g.run();
        g.getOutput(0, out).copyTo(p);
        assertEquals(expected.get("predictions").get(i).asInt(), argmax(p, 0, 10), "sample " + i);
      }
    }
  }
}
