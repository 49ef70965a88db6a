"""Column layout of the packed joint tables that every kernel reads (`Model.jint`, `Model.jfloat`).

``jint[i]``   = (parent, jtype, idx_q, idx_v, nq_i, nv_i)                  -> JI_* columns
``jfloat[i]`` = (Xtree R row-major (9), Xtree p (3), axis (3), mass (1), CoM (3),
                 inertia about the CoM in the body frame, row-major (9))     -> JF_* offsets, 28 columns
"""

JI_PARENT, JI_TYPE, JI_IQ, JI_IV, JI_NQ, JI_NV, JI_SIZE = 0, 1, 2, 3, 4, 5, 6
JF_R, JF_P, JF_AXIS, JF_MASS, JF_COM, JF_INERTIA, JF_SIZE = 0, 9, 12, 15, 16, 19, 28
