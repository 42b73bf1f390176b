package dev.kernelrunner.workers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Base64;
import org.junit.jupiter.api.Test;

/** The machine proof, on the vector remote-agent/tests/test_gpu_worker.py checks the worker with. */
class MachineKeyTest {
  private static final byte[] BYTES = new byte[32];

  static {
    for (int i = 0; i < 32; i++) {
      BYTES[i] = (byte) i;
    }
  }

  private static final MachineKey KEY = MachineKey.parse(Base64.getEncoder().encodeToString(BYTES));

  @Test
  void theProofIsTheWorkers() {
    assertEquals("1700000000.f266fc4ffccb6dec9613f2fcde38cb6f4df876091b14ac1551c982d00a34fa90",
        KEY.proof("w-1", 1700000000));
    assertEquals("630dcd2966c43366", KEY.fingerprint());
  }

  @Test
  void aProofHoldsForItsWorkerWithinTheSkewOnly() {
    String proof = KEY.proof("w-1", 1700000000);
    assertTrue(KEY.proves(proof, "w-1", 1700000000 + MachineKey.SKEW_SECONDS));
    assertFalse(KEY.proves(proof, "w-1", 1700000000 + MachineKey.SKEW_SECONDS + 1), "too old");
    assertFalse(KEY.proves(proof, "w-2", 1700000000), "another worker's");
    assertFalse(KEY.proves(proof.replace('f', 'e'), "w-1", 1700000000), "altered");
    assertFalse(KEY.proves(null, "w-1", 1700000000));
    assertFalse(KEY.proves("garbage", "w-1", 1700000000));
    byte[] other = BYTES.clone();
    other[0] = 9;
    assertFalse(MachineKey.parse(Base64.getEncoder().encodeToString(other)).proves(proof, "w-1", 1700000000),
        "another machine's key");
  }

  @Test
  void aKeyIsBase64OfThirtyTwoBytesOrMore() {
    assertNull(MachineKey.parse(Base64.getEncoder().encodeToString(new byte[31])));
    assertNull(MachineKey.parse("not base64!"));
    assertNull(MachineKey.parse(null));
    assertEquals(KEY.base64(), MachineKey.parse(KEY.base64()).base64());
  }
}
