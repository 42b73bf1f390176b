package dev.kernelrunner.http;

/** Who called: a user id and the role of their token. */
record Principal(String userId, Role role) {

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
