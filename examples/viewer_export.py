"""The viewer: a self-contained HTML replay (works from file://), and a movie if Chromium
is installed (apt-get install chromium).

    python examples/viewer_export.py        # writes four_bar.html (and four_bar.gif)
"""
import scenes
import simstep
import viewer
from _common import duration, out
from viewer.screenshot import find_chromium

world = scenes.four_bar()                                  # crank-rocker linkage with a loop closure
sim = simstep.Simulator(world)
traj = sim.run(duration=duration(1.0), record=True)

viewer.export_html(world, out("four_bar.html"), traj)      # loops, with play/pause and a time slider
print(f"wrote {out('four_bar.html')}: open it in a browser")
if find_chromium() is not None:
    n = viewer.record_video(world, traj, out("four_bar.gif"), fps=15, size=(320, 240))
    print(f"wrote {out('four_bar.gif')} ({n} frames)")
# live: v = viewer.MeshcatViewer(world); print(v.url()); v.play(traj)
