"""Delivering the engine's Notify actions to receivers (docs/notifications.md): off the tick's thread,
with retries, never logging a receiver's URL."""

from modelgate.notifications.defaults import NotificationDefaults
from modelgate.notifications.delivery import Notifier, Retries, Target

__all__ = ["NotificationDefaults", "Notifier", "Retries", "Target"]
