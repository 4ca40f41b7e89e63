"""What the email provider tells the service: its signed delivery webhook."""
