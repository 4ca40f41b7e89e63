# One image for every process type; docker-compose.yml picks the command (serve, worker, migrate).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY service ./service
COPY api ./api
COPY core ./core
COPY models ./models
COPY workers ./workers
COPY migrations ./migrations
RUN pip install --no-cache-dir . && useradd --create-home app
USER app
ENV APP_ENV=production PORT=8080
EXPOSE 8080
CMD ["legacy-planning", "serve"]
