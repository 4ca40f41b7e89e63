"""What every job family shares: the lease a job holds its work under (`leases`)."""
