package org.polyffi.examples.digits;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/**
 * The digits model as Apache TVM 0.18 exported it (one file, a GraphExecutorFactory library) gives
 * the same predictions as train.py and probabilities within float rounding of the repository's own
 * compiled model.
 */
class TvmExportTest {
  static final Path MODEL = Paths.get(System.getProperty("digits.model.dir", "../digits/model"));
  static final Path LIB =
      Paths.get(System.getProperty("digits.model.lib", "../../build/lib/libdigits_model.so"));
  static final Path TVM_LIB =
      Paths.get(
          System.getProperty(
              "digits.tvm.lib", "../../tests/tvm_models/tvm018/digits_b1/factory.so"));

  @Test
  void tvmExportAgreesWithTrainPyAndTheGraphModel() throws Exception {
    JsonNode exp = new ObjectMapper().readTree(MODEL.resolve("expected.json").toFile());
    int n = exp.get("num_samples").asInt();
    ByteBuffer xb =
        ByteBuffer.wrap(Files.readAllBytes(MODEL.resolve("test_x.bin")))
            .order(ByteOrder.LITTLE_ENDIAN);
    float[][] rows = new float[n][DigitsModel.FEATURES];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < DigitsModel.FEATURES; j++) rows[i][j] = xb.getFloat(4 * (64 * i + j));
    }
    float[][] tvm;
    float[][] ours;
    try (DigitsModel m = DigitsModel.fromTvmExport(TVM_LIB)) {
      tvm = m.predict(rows);
    }
    try (DigitsModel m = new DigitsModel(MODEL, LIB)) {
      ours = m.predict(rows);
    }
    double maxDiff = 0;
    for (int i = 0; i < n; i++) {
      assertEquals(
          exp.get("predictions").get(i).asInt(), DigitsModel.argmax(tvm[i]), "sample " + i);
      for (int j = 0; j < DigitsModel.CLASSES; j++) {
        maxDiff = Math.max(maxDiff, Math.abs(tvm[i][j] - ours[i][j]));
      }
    }
    assertTrue(maxDiff < 1e-5, "max |p_tvm - p_graph| = " + maxDiff);
  }

  @Test
  void aLibraryThatIsNoTvmExportIsAClearError() {
    RuntimeException e = assertThrows(RuntimeException.class, () -> DigitsModel.fromTvmExport(LIB));
    assertTrue(e.getMessage().contains("'default'"), e.getMessage());
  }
}
