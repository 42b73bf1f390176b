package dev.kernelrunner.http;

/** Who called: a user id and whether they are an admin. */
record Principal(String userId, boolean admin) {

  boolean mayAccess(String owner) {
    return admin || userId.equals(owner);
  }
}
