package dev.kernelrunner.http;

/** Who called: a user id and the role of their token; a worker token's {@link Pool} (null for other tokens). */
record Principal(String userId, Role role, Pool pool) {

  /**
   * What a worker token may do: it is {@code tokenId} (its public id), of pool {@code name}, serves
   * {@code gpuTypes} (null: any type served by connecting workers, never this host's own), its results rank only
   * when the pool is {@code trusted}, and it works only on the machine whose key it is bound to ({@code machine}:
   * null while unbound).
   */
  record Pool(String tokenId, String name, java.util.List<String> gpuTypes, boolean trusted,
              dev.kernelrunner.workers.MachineKey machine) {}

  Principal(String userId, Role role) {
    this(userId, role, null);
  }

  /** A token's role: a user submits, an admin also administers, a worker only serves jobs (/api/worker/). */
  enum Role {
    USER, ADMIN, WORKER;

    static Role of(String name) {
      return switch (name) {
        case "admin" -> ADMIN;
        case "worker" -> WORKER;
        default -> USER;
      };
    }
  }

  Principal(String userId, boolean admin) {
    this(userId, admin ? Role.ADMIN : Role.USER);
  }

  boolean admin() {
    return role == Role.ADMIN;
  }

  boolean worker() {
    return role == Role.WORKER;
  }

  boolean mayAccess(String owner) {
    return admin() || userId.equals(owner);
  }
}
