pub mod plan_crawlers;
