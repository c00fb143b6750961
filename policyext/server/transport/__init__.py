"""Raw HTTP, beneath the application: gunicorn's worker reading each request whole in its
event loop (`worker`), where a request ends (`framing`), which requests are plain POSTs of
JSON the direct lane may take (`plain`), and how their replies are written (`responses`).

Nothing here knows a verb: the application hands the worker its lane entry (a path and a
body in, a status line and a JSON body out), and every status and error body the worker
sends on its own is decided in `server/statuses.py`.
"""
