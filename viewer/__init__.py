"""Meshcat viewer: live view of a simulation, animated playback, self-contained HTML export."""
from .meshcat_viewer import MeshcatViewer
from .recording import SceneRecorder, as_trajectory, contact_arrows, export_html
from .scene import MESH_FORMATS, MeshError, load_mesh
from .transport import ViewerConnectionError
from .video import record_video

__all__ = ["MeshcatViewer", "SceneRecorder", "export_html", "as_trajectory", "contact_arrows", "MeshError", "load_mesh",
           "MESH_FORMATS", "ViewerConnectionError", "record_video"]
