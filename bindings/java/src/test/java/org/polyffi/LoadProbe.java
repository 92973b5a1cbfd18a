package org.polyffi;

/** Run in a child JVM by LibraryTest: prints the load error and exits 3. */
public final class LoadProbe {
  private LoadProbe() {}

  public static void main(String[] args) {
    try {
      System.out.println("loaded " + Library.runtimeVersion());
    } catch (UnsatisfiedLinkError e) {
      System.out.println(e.getMessage());
      System.exit(3);
    }
  }
}
