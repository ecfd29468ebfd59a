"""The tier's side effects: BIRD's control socket, static-route announcements, the DSR router."""
