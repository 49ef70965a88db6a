"""Geometry kind codes of the collision kernels (a shape's ``kind`` in `shapes.ShapeTable`)."""
PLANE, SPHERE, CAPSULE, CYLINDER, BOX, CONVEX = 0, 1, 2, 3, 4, 5
KIND_CODES = {"plane": PLANE, "sphere": SPHERE, "capsule": CAPSULE, "cylinder": CYLINDER,
              "box": BOX, "mesh": CONVEX}
