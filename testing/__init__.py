"""Stand-ins for the outside world, shared by the tests and the benchmarks: moto's S3 server
(s3server), the Soroban RPC emulator (soroban_rpc), the email provider's capture server
(emailserver). Each is also a pytest plugin with its fixture (tests/conftest.py
`pytest_plugins`). Production code never imports this package, and it never imports tests/.
"""
